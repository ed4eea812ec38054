//! Reading a shell command line far enough to say which programs it runs, and no further.
//!
//! A `run_program` grant (and `tools.command_allowlist`, which the daemon turns into such
//! grants) covers a command line only when every simple command in it starts with an allowed
//! prefix of words. That is only sound if the reading is conservative: anything whose effect a
//! word-by-word reading cannot see — command substitution, process substitution, subshells,
//! background jobs, redirections to files, here-documents, leading variable assignments,
//! comments, unbalanced quotes — makes the line unreadable, and an unreadable line is covered by
//! no program grant (it prompts as before). Pure and total like the rest of the crate.

/// The simple commands of `line`, each as its words with quotes and escapes removed, split at
/// `;`, `&&`, `||`, `|` and newlines. `None` when the line holds anything a prefix match
/// cannot vouch for (see the module documentation) or no command at all.
pub fn simple_commands(line: &str) -> Option<Vec<Vec<String>>> {
    let mut lexer = Lexer::default();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => lexer.end_word(),
            '\n' | ';' => lexer.end_command(),
            '&' if chars.next_if_eq(&'&').is_some() => lexer.end_command(),
            '|' if chars.next_if_eq(&'|').is_some() => lexer.end_command(),
            '|' if chars.peek() != Some(&'&') => lexer.end_command(),
            '\'' => loop {
                lexer.word.get_or_insert_with(String::new);
                match chars.next()? {
                    '\'' => break,
                    other => lexer.push(other),
                }
            },
            '"' => loop {
                lexer.word.get_or_insert_with(String::new);
                match chars.next()? {
                    '"' => break,
                    '`' => return None,
                    '$' if chars.peek() == Some(&'(') => return None,
                    '\\' => match chars.next()? {
                        '\n' => {}
                        escaped @ ('"' | '\\' | '$' | '`') => lexer.push(escaped),
                        other => {
                            lexer.push('\\');
                            lexer.push(other);
                        }
                    },
                    other => lexer.push(other),
                }
            },
            '\\' => match chars.next()? {
                '\n' => {}
                escaped => lexer.push(escaped),
            },
            '$' if chars.peek() == Some(&'(') => return None,
            '>' => lexer.redirect(&mut chars)?,
            '#' if lexer.word.is_none() => return None,
            '`' | '(' | ')' | '<' | '&' | '|' => return None,
            other => lexer.push(other),
        }
    }
    lexer.end_command();
    if lexer.unreadable || lexer.commands.is_empty() {
        return None;
    }
    Some(lexer.commands)
}

/// A command line read once ([`simple_commands`]): the daemon reads a command call's line when
/// it prepares the call, and its decision and its card both use this reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    line: String,
    commands: Option<Vec<Vec<String>>>,
}

impl CommandLine {
    pub fn read(line: &str) -> CommandLine {
        CommandLine {
            line: line.to_owned(),
            commands: simple_commands(line),
        }
    }

    /// The line as written.
    pub fn line(&self) -> &str {
        &self.line
    }

    /// Its simple commands, each as its words; `None` when it is unreadable.
    pub fn commands(&self) -> Option<&[Vec<String>]> {
        self.commands.as_deref()
    }
}

/// The words of `prefix` when it is exactly one simple command, as a grant's scope must be.
pub fn prefix_words(prefix: &str) -> Option<Vec<String>> {
    let mut commands = simple_commands(prefix)?;
    match commands.len() {
        1 => commands.pop(),
        _ => None,
    }
}

/// True when `words` begins with every word of `prefix`, compared exactly.
pub fn starts_with_words(words: &[String], prefix: &[String]) -> bool {
    !prefix.is_empty()
        && words.len() >= prefix.len()
        && words.iter().zip(prefix).all(|(w, p)| w == p)
}

#[derive(Default)]
struct Lexer {
    commands: Vec<Vec<String>>,
    words: Vec<String>,
    /// The word being read; `Some("")` after an empty quoted string, which is still a word.
    word: Option<String>,
    /// A leading `NAME=value` word was seen: the program could be anything.
    unreadable: bool,
}

impl Lexer {
    fn push(&mut self, c: char) {
        self.word.get_or_insert_with(String::new).push(c);
    }

    fn end_word(&mut self) {
        if let Some(word) = self.word.take() {
            if self.words.is_empty() && is_assignment(&word) {
                self.unreadable = true;
            }
            self.words.push(word);
        }
    }

    fn end_command(&mut self) {
        self.end_word();
        if !self.words.is_empty() {
            self.commands.push(std::mem::take(&mut self.words));
        }
    }

    /// Accepts the two redirections that write nowhere a person would care about: duplicating
    /// a descriptor (`2>&1`) and discarding output (`>/dev/null`, `2> /dev/null`). The digits
    /// of a descriptor number read so far belong to the redirection, not to a word.
    fn redirect(&mut self, chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<()> {
        match &self.word {
            Some(word) if word.chars().all(|c| c.is_ascii_digit()) => self.word = None,
            Some(_) => self.end_word(),
            None => {}
        }
        chars.next_if_eq(&'>');
        if chars.next_if_eq(&'&').is_some() {
            let mut digits = 0;
            while chars.next_if(char::is_ascii_digit).is_some() {
                digits += 1;
            }
            let ends = matches!(
                chars.peek(),
                None | Some(' ' | '\t' | '\n' | ';' | '&' | '|')
            );
            return (digits > 0 && ends).then_some(());
        }
        while chars.next_if(|c| *c == ' ' || *c == '\t').is_some() {}
        let target: String = std::iter::from_fn(|| {
            chars.next_if(|c| !matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|'))
        })
        .collect();
        (target == "/dev/null").then_some(())
    }
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests;
