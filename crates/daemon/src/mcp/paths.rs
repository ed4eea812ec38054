//! MCP arguments read for what they are, not what they are called: every string at any depth
//! of a call's arguments that is an absolute path, starts with `~` or `$VAR`, or is a `file:`
//! URI is a path the fence judges, and so is one the tool's input schema marks as a path
//! (`format`, a name such as `repo_path`, a description that says path, directory or file).
//!
//! This module only reads: it expands `~` and variables from the environment the server runs
//! with and says what each string names. `crate::calls::resolve` then follows symlinks, and the policy
//! judges the result from the recorded task (`ImpliedBy::ArgumentPath`, `FileUri`, `Unjudged`),
//! so a replay needs nothing from here.

use std::collections::BTreeMap;

use codaris_policy::BadPath;
use serde_json::Value;

/// Argument names that name files: held to the fence like a built-in's path arguments.
pub const PATH_ARGS: [&str; 8] = [
    "path",
    "paths",
    "file",
    "directory",
    "source",
    "destination",
    "src",
    "dst",
];

/// The variables a path may name (`$HOME/x`, `${TMPDIR}/y`), expanded from the server's
/// environment. Only these: expanding any other (an API key a registration passes) would write
/// its value into the ledger and a card. Any other variable is one the fence cannot judge.
const EXPANDED: [&str; 12] = [
    "HOME",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "TMP",
    "TEMP",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "NXF_HOME",
];

/// The most paths judged in one call; a call naming more is refused (`TooManyPaths`) rather
/// than judged in part, and the resolving each costs (file system calls) stays bounded.
pub const MAX_PATHS: usize = 1024;

/// Words that make an argument's name or description say it is a path.
const PATH_WORDS: [&str; 14] = [
    "path",
    "paths",
    "dir",
    "dirs",
    "directory",
    "directories",
    "file",
    "files",
    "filename",
    "filepath",
    "folder",
    "folders",
    "cwd",
    "workdir",
];

/// Schema `format`s that say a string is a path or a URI.
const PATH_FORMATS: [&str; 5] = ["uri", "uri-reference", "iri", "path", "file-path"];

/// What the daemon reads of an MCP tool's arguments beyond its spec.
#[derive(Debug, Clone, Default)]
pub struct ArgumentMarks {
    /// The server is trusted: an argument the fence cannot judge is passed as it was.
    pub trusted: bool,
    /// The tool's input schema as its server listed it.
    pub schema: Value,
    /// The variables of [`EXPANDED`] as the server's environment holds them.
    pub env: BTreeMap<String, String>,
    /// The only top-level arguments read for paths, when not every one is: a tool whose other
    /// arguments name places that are not on this machine (a Seqera Platform launch's work dir
    /// and params are the compute environment's) has its local paths declared in its spec.
    pub only: Option<&'static [&'static str]>,
}

impl ArgumentMarks {
    /// The marks of a tool of a server that starts with `server_env`.
    pub fn new<K, V>(
        trusted: bool,
        schema: Value,
        server_env: impl IntoIterator<Item = (K, V)>,
    ) -> Self
    where
        K: AsRef<std::ffi::OsStr>,
        V: AsRef<std::ffi::OsStr>,
    {
        let env = server_env
            .into_iter()
            .filter_map(|(key, value)| {
                let key = key.as_ref().to_str()?;
                let value = value.as_ref().to_str()?;
                EXPANDED
                    .contains(&key)
                    .then(|| (key.to_owned(), value.to_owned()))
            })
            .collect();
        Self {
            trusted,
            schema,
            env,
            only: None,
        }
    }
}

/// What one string of the arguments names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// A path, absolute or relative to the session's directory, `~` and variables expanded.
    Path(String),
    /// The path a local `file:` URI names, percent-decoded.
    Uri(String),
    /// A path the fence cannot judge, and why.
    Unjudged(BadPath),
}

/// One finding, with the JSON pointer of the argument it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub pointer: String,
    pub named: Named,
    /// The value as the model sent it, cut to [`RAW_BYTES`]: what an unjudged one was.
    pub raw: String,
}

/// How much of a value a finding keeps.
const RAW_BYTES: usize = 256;

fn cut(text: &str) -> String {
    let mut end = text.len().min(RAW_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Every path the call's arguments name, each once. An untrusted server's argument that names
/// a path the fence cannot judge is in the list as [`Named::Unjudged`]; a trusted server's is
/// left out. Walks iteratively, so no nesting depth exhausts the stack; more than
/// [`MAX_PATHS`] paths come back as one `TooManyPaths`.
pub fn argument_paths(marks: &ArgumentMarks, args: &Value) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    let mut paths = 0usize;
    let mut stack: Vec<(&Value, Option<&Value>, String, Mark)> =
        vec![(args, Some(&marks.schema), String::new(), Mark::None)];
    while let Some((value, schema, pointer, mark)) = stack.pop() {
        let named = match value {
            Value::Object(map) => {
                let properties = schema.and_then(|s| s.get("properties"));
                for (key, child) in map {
                    if pointer.is_empty()
                        && marks.only.is_some_and(|only| !only.contains(&key.as_str()))
                    {
                        continue;
                    }
                    let sub = properties.and_then(|p| p.get(key));
                    let mark = marked(key, sub);
                    stack.push((child, sub, child_pointer(&pointer, &escape(key)), mark));
                }
                continue;
            }
            Value::Array(items) => {
                let sub = schema.and_then(|s| s.get("items"));
                for (at, child) in items.iter().enumerate() {
                    stack.push((child, sub, child_pointer(&pointer, &at.to_string()), mark));
                }
                continue;
            }
            Value::String(text) => read(text, mark != Mark::None, &marks.env),
            // A value the schema says is a path string and is not: what the server makes of
            // it is unknown.
            Value::Number(_) | Value::Bool(_) if mark == Mark::Typed => {
                vec![Named::Unjudged(BadPath::NotString)]
            }
            Value::Number(_) | Value::Bool(_) | Value::Null => continue,
        };
        for named in named {
            if marks.trusted && matches!(named, Named::Unjudged(_)) {
                continue;
            }
            paths += 1;
            if paths > MAX_PATHS {
                return vec![Found {
                    pointer: String::new(),
                    named: Named::Unjudged(BadPath::TooManyPaths),
                    raw: String::new(),
                }];
            }
            let found_one = Found {
                pointer: pointer.clone(),
                named,
                raw: match value {
                    Value::String(text) => cut(text),
                    other => cut(&other.to_string()),
                },
            };
            if !found.contains(&found_one) {
                found.push(found_one);
            }
        }
    }
    found
}

/// How an argument's schema or name marks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    None,
    /// By its name or description: a relative string value is a path.
    Named,
    /// By a schema that also says it is a string: any other value cannot be judged.
    Typed,
}

/// Whether the property `name` with schema `schema` (when the tool's schema describes it) is a
/// path: a path `format`, a name whose words say path, directory or file (`repo_path`,
/// `workingDir`, `repo*`, `root*`, `cwd`), or a description that does. A property declared with
/// types none of which can hold a path (`integer`) is not, whatever its name.
fn marked(name: &str, schema: Option<&Value>) -> Mark {
    let types = schema.map(declared_types).unwrap_or_default();
    if !types.is_empty() && !types.iter().any(|t| t == "string" || t == "array") {
        return Mark::None;
    }
    let format = schema
        .and_then(|s| s.get("format"))
        .and_then(Value::as_str)
        .is_some_and(|f| PATH_FORMATS.contains(&f));
    let name_words = words(name);
    let by_name = name_words.iter().any(|w| PATH_WORDS.contains(&w.as_str()))
        || name_words
            .first()
            .is_some_and(|w| w.starts_with("repo") || w.starts_with("root"))
        || PATH_ARGS.contains(&name);
    let by_description = schema
        .and_then(|s| s.get("description"))
        .and_then(Value::as_str)
        .is_some_and(|d| words(d).iter().any(|w| PATH_WORDS.contains(&w.as_str())));
    match (
        format || by_name || by_description,
        types.iter().any(|t| t == "string"),
    ) {
        (false, _) => Mark::None,
        (true, true) => Mark::Typed,
        (true, false) => Mark::Named,
    }
}

/// The JSON types a schema declares, from `type` and the branches of `anyOf`/`oneOf`.
fn declared_types(schema: &Value) -> Vec<String> {
    let mut types = Vec::new();
    let mut add = |value: Option<&Value>| match value {
        Some(Value::String(t)) => types.push(t.clone()),
        Some(Value::Array(list)) => {
            types.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        _ => {}
    };
    add(schema.get("type"));
    for key in ["anyOf", "oneOf"] {
        for branch in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            add(branch.get("type"));
        }
    }
    types.retain(|t| t != "null");
    types
}

/// The lower-case words of a name or a sentence: split at anything not a letter or digit and
/// where a lower-case letter meets an upper-case one (`repoPath` is `repo path`).
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut last_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            last_lower = false;
            continue;
        }
        if c.is_uppercase() && last_lower && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        last_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// The longest JSON pointer a finding names; a deeper one ends in `/…`, so that walking very
/// deep arguments costs time in proportion to their size, not its square.
const MAX_POINTER: usize = 512;

fn child_pointer(parent: &str, segment: &str) -> String {
    if parent.len() >= MAX_POINTER {
        return parent.to_owned();
    }
    let mut pointer = format!("{parent}/{segment}");
    if pointer.len() >= MAX_POINTER {
        let mut end = MAX_POINTER;
        while !pointer.is_char_boundary(end) {
            end -= 1;
        }
        pointer.truncate(end);
        pointer.push_str("/…");
    }
    pointer
}

/// A key as a JSON pointer writes it (RFC 6901).
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// What a string names: nothing unless it is a `file:` URI, starts with `/`, `./`, `../`, `~`
/// or `$`, or is `marked` by its argument's schema or name (then a relative value is a path
/// too, resolved against the session's directory).
pub fn read(text: &str, marked: bool, env: &BTreeMap<String, String>) -> Vec<Named> {
    if let Some(rest) = strip_prefix_ignore_case(text, "file:") {
        return read_uri(rest, env);
    }
    let starts_path = text.starts_with('/')
        || text.starts_with("./")
        || text.starts_with("../")
        || text == "."
        || text == ".."
        || tilde(text).is_some()
        || text.starts_with("${")
        || text
            .strip_prefix('$')
            .is_some_and(|rest| name_len(rest) > 0);
    // A marked value with a scheme (`https://…`) is judged as a relative path too: a server
    // that takes it for a path would resolve `x:/../..` against its directory.
    if starts_path || marked {
        expanded(text, env).into_iter().map(Named::from).collect()
    } else {
        Vec::new()
    }
}

impl From<Result<String, BadPath>> for Named {
    fn from(result: Result<String, BadPath>) -> Self {
        match result {
            Ok(path) => Named::Path(path),
            Err(why) => Named::Unjudged(why),
        }
    }
}

/// A path as written and as a server that expands it reads it: `~` and every variable
/// expanded. Both are judged, since a server may do either. A variable or `~` form the fence
/// cannot expand makes the whole string unjudgeable.
fn expanded(text: &str, env: &BTreeMap<String, String>) -> Vec<Result<String, BadPath>> {
    let home = match tilde(text) {
        None => None,
        Some(Tilde::Own(rest)) => match env.get("HOME") {
            Some(home) => Some(format!("{home}{rest}")),
            None => return vec![Err(BadPath::UnknownVariable)],
        },
        Some(Tilde::Other) => return vec![Err(BadPath::OtherUsersHome)],
    };
    let base = home.as_deref().unwrap_or(text);
    let variables = match expand_variables(base, env) {
        Ok(expanded) => expanded,
        Err(why) => return vec![Err(why)],
    };
    let mut out = vec![Ok(text.to_owned())];
    if variables != text {
        out.push(Ok(variables));
    }
    out
}

/// The forms of a leading `~`.
enum Tilde<'a> {
    /// `~` or `~/rest`: the home directory, then `rest` (with its `/`).
    Own(&'a str),
    /// `~name`, `~name/…`, `~+`, `~-`: another user's home or a shell's directory stack.
    Other,
}

fn tilde(text: &str) -> Option<Tilde<'_>> {
    let rest = text.strip_prefix('~')?;
    let name = rest.find('/').map_or(rest, |at| &rest[..at]);
    if name.is_empty() {
        return Some(Tilde::Own(rest));
    }
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
        .then_some(Tilde::Other)
}

/// `text` with every `$NAME` and `${NAME}` replaced by its value. A `$` not followed by a name
/// or `{` is kept (`$5`); a variable not in the server's expanded set, or a `${` that is not
/// `${NAME}` (a shell's `${X:-y}`), is one the fence cannot judge.
fn expand_variables(text: &str, env: &BTreeMap<String, String>) -> Result<String, BadPath> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, consumed) = if let Some(braced) = after.strip_prefix('{') {
            let len = name_len(braced);
            if len == 0 || braced.as_bytes().get(len) != Some(&b'}') {
                return Err(BadPath::UnknownVariable);
            }
            (&braced[..len], len + 2)
        } else {
            let len = name_len(after);
            if len == 0 {
                out.push('$');
                rest = after;
                continue;
            }
            (&after[..len], len)
        };
        match env.get(name) {
            Some(value) => out.push_str(value),
            None => return Err(BadPath::UnknownVariable),
        }
        rest = &after[consumed..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The length of the variable name `text` starts with (`[A-Za-z_][A-Za-z0-9_]*`), 0 if none.
fn name_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    if !bytes
        .first()
        .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
    {
        return 0;
    }
    bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count()
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.get(..prefix.len())
        .filter(|head| head.eq_ignore_ascii_case(prefix))
        .map(|_| &text[prefix.len()..])
}

/// A `file:` URI after its scheme, in any of RFC 8089's forms: `file:/p`, `file:///p`,
/// `file://localhost/p` (host in any case). Another host cannot be judged. The path is
/// percent-decoded and then read as a path (a server that expands `~` or variables in it is
/// covered); with a query or fragment, the path both with and without it is judged.
fn read_uri(rest: &str, env: &BTreeMap<String, String>) -> Vec<Named> {
    let path = match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let (host, path) = match authority_and_path.find('/') {
                Some(at) => authority_and_path.split_at(at),
                None => (authority_and_path, "/"),
            };
            let host = percent_decode(host);
            if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
                return vec![Named::Unjudged(BadPath::ForeignHost)];
            }
            path
        }
        None => rest,
    };
    let mut forms = vec![path];
    if let Some(cut) = path.find(['?', '#']) {
        forms.insert(0, &path[..cut]);
    }
    let mut out = Vec::new();
    for form in forms {
        for named in expanded(&percent_decode(form), env) {
            let named = match named {
                Ok(path) => Named::Uri(path),
                Err(why) => Named::Unjudged(why),
            };
            if !out.contains(&named) {
                out.push(named);
            }
        }
    }
    out
}

/// The path a `file:` URI names, host dropped, for a path argument of a carried spec; `None`
/// for anything else.
pub fn file_uri_path(text: &str) -> Option<String> {
    let rest = strip_prefix_ignore_case(text, "file:")?;
    let path = match rest.strip_prefix("//") {
        Some(authority_and_path) => authority_and_path
            .find('/')
            .map_or("/", |at| &authority_and_path[at..]),
        None => rest,
    };
    let path = path.split(['?', '#']).next().unwrap_or(path);
    Some(percent_decode(path))
}

/// `%XX` decoded to its byte; anything else kept. Bytes that are not UTF-8 read as U+FFFD,
/// which can never be a `/` or a `.`, so a path's components stay where they were.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[at], bytes.get(at + 1), bytes.get(at + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                decoded.push(u8::try_from(value).unwrap_or(b'?'));
                at += 3;
            }
            (byte, _, _) => {
                decoded.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
#[path = "paths_tests.rs"]
mod tests;
