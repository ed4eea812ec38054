//! The command line, as clap types. Parsing only; `commands` runs them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Codaris: a local agent daemon whose every permission decision is explained, recorded and
/// replayable. This is its command line; without a command it opens `codaris chat` in the
/// current directory.
#[derive(Debug, Parser)]
#[command(name = "codaris", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// None: `codaris` alone, which chats.
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// State directory of the daemon to talk to [default: $CODARIS_STATE_DIR, else $XDG_STATE_HOME/codaris, else ~/.local/state/codaris]
    #[arg(long, global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Fail instead of starting codarisd in the background when it is not running
    #[arg(long, global = true)]
    pub no_autostart: bool,
    /// Print machine-readable JSON instead of text
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Walk through Codaris on a sample pipeline: a real daemon on a temporary state
    /// directory, the scripted model, each step explained
    Demo {
        /// Keep the temporary directory (project, state, ledger) instead of removing it
        #[arg(long)]
        keep: bool,
    },
    /// Show the daemon's version, uptime, pid, state directory, socket, sessions and tools
    Status,
    /// Start, stop and inspect the daemon
    #[command(subcommand)]
    Daemon(DaemonCommand),
    /// Run one session: each PROMPT is one turn, in order; permission cards are answered by
    /// --approve. The model's text goes to standard output, every other line to standard
    /// error. Ctrl-C, SIGTERM or a closed output cancel the turn and end the session
    Run(RunArgs),
    /// An interactive session: streaming text, each tool call and its result, cards answered at
    /// a prompt; Ctrl-C cancels the turn, Ctrl-D ends the session. `/help` lists chat's own
    /// commands. `codaris` without a command opens it too
    Chat(ChatArgs),
    /// Serve an editor over the Agent Client Protocol (ACP v1) on standard input and output:
    /// Zed, JetBrains, Neovim and Emacs drive codarisd with no plugin. Standard output carries
    /// only ACP messages; logs go to standard error
    #[command(after_help = crate::acp::setup::SETUP)]
    Acp(AcpArgs),
    /// The stored sessions, ended ones too, most recently used first: id, title, tags, cwd,
    /// state, turns and last activity. `codaris chat --resume ID` or `codaris run --session ID`
    /// continues one
    Sessions {
        /// List ended sessions too: the default now, kept so scripts that pass it still work
        #[arg(long, conflicts_with = "open")]
        all: bool,
        /// Only the live sessions, not the ended ones
        #[arg(long)]
        open: bool,
        /// Only the sessions filed under TAG (by `session_describe`); repeat it to ask for
        /// every one of several tags
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// At most N sessions, the most recently used; 0 lists them all
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: usize,
    },
    /// Search the tool index, list it, and measure search quality
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// The agent definitions `spawn_agent` can name (built in, yours, the project's)
    #[command(subcommand)]
    Agents(AgentsCommand),
    /// The notes the memory subagent keeps between sessions (yours and the project's)
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Add, list, switch and approve the daemon's MCP servers, and list their tools
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Scheduled jobs: list, show, their runs, run one now, cancel, pause, resume, and approve a
    /// project's job (`[scheduler] enabled`)
    #[command(subcommand)]
    Scheduler(SchedulerCommand),
    /// List and revoke grants, list decisions, export the ledger (through the daemon)
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// List and download the files a session's model shared with share_file
    #[command(subcommand)]
    Shared(SharedCommand),
    /// The pipeline runs Codaris launched, local and on Seqera Platform, newest first, with
    /// where each went (from the ledger's decisions that let them start)
    Runs {
        /// At most N runs; 0 lists them all
        #[arg(short = 'n', long, value_name = "N", default_value_t = 50)]
        limit: usize,
    },
    /// Replay recorded decisions offline against this build's policy
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Decide policy requests offline, without a daemon
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Set up a model: store a provider, model, base URL and key with the daemon (the key in a
    /// 0600 file in its state directory, read without echo); the next session uses them
    #[command(visible_alias = "setup")]
    Login(LoginArgs),
    /// Check each configured model provider with one cheap request and name what is missing;
    /// exit 1 when any check fails
    Doctor {
        /// Also read each executor profile in this pipeline's config, as a launch of it reads
        /// it: the executor it sets and the work directory the run would use
        #[arg(long, value_name = "DIR")]
        pipeline: Option<std::path::PathBuf>,
    },
    /// The daemon's configuration: the values in force and where each came from, a file
    /// checked offline, the file's path
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Put back the files one turn changed through its tools (edits, writes, patches, moves,
    /// removals; not what its commands changed), refused when a file changed since; recorded
    /// in the ledger. Default: the last turn that changed files, of the latest session in this
    /// directory
    Undo(UndoArgs),
    /// Print a shell completion script
    Completions {
        /// The shell to complete for
        shell: Shell,
    },
    /// Print the man page (roff), e.g. `codaris man > ~/.local/share/man/man1/codaris.1`
    Man,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The turn, counted from 1 as chat shows it [default: the session's last turn that changed
    /// files and is not undone yet]
    #[arg(long, value_name = "N")]
    pub turn: Option<u32>,
    /// The session [default: the most recently used one whose directory is this one]
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Print the diff of what would be put back, and change nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The provider: anthropic or openai [default: asked, anthropic when not a terminal]
    #[arg(long, value_name = "P", value_parser = ["anthropic", "openai"])]
    pub provider: Option<String>,
    /// The model sessions ask, e.g. claude-sonnet-4-5 [default: the stored one]
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// The API's base URL, http(s) [default: the stored one, else the provider's public endpoint]
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Read the key from standard input (one line) instead of the terminal
    #[arg(long)]
    pub key_stdin: bool,
    /// Keep the stored key; change only provider, model or base URL
    #[arg(long, conflicts_with = "key_stdin")]
    pub keep_key: bool,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Every value in force and where it came from: default, file, environment, flag, login
    /// (secrets redacted)
    Show,
    /// Check a configuration file offline (no daemon or codarisd binary needed): prints `ok` or
    /// every error, one line each with file and line; exit 1 on error
    Check {
        /// The file [default: the one the daemon reads: $CODARIS_CONFIG, else
        /// $XDG_CONFIG_HOME/codaris/config.toml]
        file: Option<PathBuf>,
    },
    /// The configuration file the daemon reads, and whether it exists
    Path,
    /// A value of the file by dotted path (`tools.command_allowlist`; `.`, the default, is the
    /// whole file), secrets redacted
    Get { path: Option<String> },
    /// Stage edits of the file, each checked as it is staged (all or none): `PATH=VALUE` sets,
    /// or a whole command `set|add_list|del_list PATH=VALUE`, `delete PATH`. Nothing is in
    /// force until `codaris config commit`
    Set {
        #[arg(required = true)]
        commands: Vec<String>,
    },
    /// The staged commands, the diff they make, and which recorded decisions they would turn
    Changes,
    /// Discard staged commands: all of them, or those at or under PATH
    Revert { path: Option<String> },
    /// Validate the staged commands as codarisd reads its file at start, keep the previous file
    /// as a snapshot, write the new one, record the change in the ledger and reload codarisd
    Commit,
    /// Put back the file the last commit replaced, record it and reload codarisd
    Rollback,
    /// Put the file in force as you edited it by hand, without restarting codarisd: validated as a commit is, recorded in the ledger (a rollback undoes it), nothing written
    Reload,
}

#[derive(Debug, Subcommand)]
pub enum DaemonCommand {
    /// Start codarisd in the background (does nothing if it is already running)
    Start,
    /// Stop the running codarisd gracefully
    Stop,
    /// Say whether codarisd is running; exit code 3 when it is not
    Status,
    /// Write a service definition for this user, with this installation's codarisd: the
    /// systemd user unit (the default on Linux) or the launchd agent (the default on macOS)
    Install {
        /// The systemd user unit, `$XDG_CONFIG_HOME/systemd/user/codarisd.service`
        #[arg(long, conflicts_with = "launchd")]
        systemd: bool,
        /// The launchd agent, `~/Library/LaunchAgents/dev.codaris.codarisd.plist`
        #[arg(long)]
        launchd: bool,
    },
    /// Print the daemon's log
    Logs {
        /// How many lines from the end to print
        #[arg(short = 'n', long, default_value_t = 50)]
        lines: usize,
        /// Keep printing lines as they are written, until interrupted
        #[arg(short, long)]
        follow: bool,
    },
}

/// What a new session is opened with (`codaris run` and `codaris chat`).
#[derive(Debug, Args)]
pub struct SessionArgs {
    /// Model provider: scripted, anthropic or openai [default: CODARIS_PROVIDER, else the
    /// daemon's (`codaris login`)]
    #[arg(long, value_name = "P")]
    pub provider: Option<String>,
    /// The model to ask [default: CODARIS_MODEL or the configuration's]
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The API's base URL for this session, http(s) [default: OPENAI_BASE_URL or
    /// ANTHROPIC_BASE_URL, whichever is the provider's, else the daemon's]
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The script the scripted provider plays (JSON, see docs/surface.md); names the scripted
    /// provider unless --provider says otherwise
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Working directory of the session [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Operating mode
    #[arg(long, value_enum, default_value_t = Mode::Agent)]
    pub mode: Mode,
    /// How much to ask before acting
    #[arg(long, value_enum, default_value_t = PermissionModeArg::Ask)]
    pub permission_mode: PermissionModeArg,
}

/// What a resumed session keeps from its record: a flag that would open it differently
/// conflicts (`--model` may switch its model). Explicit flags only: defaults never conflict.
const RESUME_CONFLICTS: [&str; 5] = ["provider", "script", "cwd", "mode", "permission_mode"];

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    /// Continue the stored session ID (active or ended) with its history, in its own cwd,
    /// instead of opening a new one; an ended one is ended again afterwards
    #[arg(long = "session", value_name = "ID", conflicts_with_all = RESUME_CONFLICTS)]
    pub resume: Option<String>,
    /// How every permission card is answered
    #[arg(long, value_enum, default_value_t = Approve::Deny)]
    pub approve: Approve,
    /// The answer to the model's next `question`: an option's label (`a,b` for several where
    /// the question takes several), or `custom:TEXT` in your own words; repeatable, one per
    /// question in the order asked. With none left the model reads that nobody could answer
    #[arg(long = "answer", value_name = "LABEL")]
    pub answers: Vec<String>,
    /// A file the model reads before the first prompt, named (text, at most 256 KiB);
    /// repeatable. Standard input piped beside a prompt is read the same way
    #[arg(long = "context", value_name = "FILE")]
    pub context: Vec<PathBuf>,
    /// Show each allowed call's decision code (`allowed_by_grant`) on its line
    #[arg(long)]
    pub verbose: bool,
    /// The turns' messages; `-` reads one from standard input
    #[arg(value_name = "PROMPT", required = true)]
    pub prompts: Vec<String>,
}

/// What every session `codaris acp` opens is asked with; its cwd is the editor's project.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// Model provider: scripted, anthropic or openai [default: CODARIS_PROVIDER, else the
    /// daemon's (`codaris login`)]
    #[arg(long, value_name = "P")]
    pub provider: Option<String>,
    /// The model to ask [default: CODARIS_MODEL or the configuration's]
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The API's base URL, http(s) [default: OPENAI_BASE_URL or ANTHROPIC_BASE_URL, whichever
    /// is the provider's, else the daemon's]
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The script the scripted provider plays (JSON, see docs/surface.md); names the scripted
    /// provider unless --provider says otherwise
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Operating mode a new session starts in (the editor may switch it)
    #[arg(long, value_enum, default_value_t = Mode::Agent)]
    pub mode: Mode,
    /// How much a new session asks before acting (the editor may switch it)
    #[arg(long, value_enum, default_value_t = PermissionModeArg::Ask)]
    pub permission_mode: PermissionModeArg,
}

impl AcpArgs {
    /// The same choices as the session flags of `run` and `chat`, with no cwd of their own.
    pub fn session_args(&self) -> SessionArgs {
        SessionArgs {
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            script: self.script.clone(),
            cwd: None,
            mode: self.mode,
            permission_mode: self.permission_mode,
        }
    }
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    /// Continue the stored session ID (active or ended) with its history, in its own cwd
    #[arg(long, value_name = "ID", conflicts_with_all = RESUME_CONFLICTS)]
    pub resume: Option<String>,
    /// Show each allowed call's decision code (`allowed_by_grant`) on its line
    #[arg(long)]
    pub verbose: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Agent,
    Plan,
    Ask,
}

/// The permission modes, spelled as the policy, the configuration and the `run` contract
/// spell them (`accept_edits`); `accept-edits`, clap's own spelling before, still parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PermissionModeArg {
    /// A card for every write, command, configuration change and HTTP request
    Ask,
    /// File writes inside the fence without a card; commands and the rest still ask
    #[value(name = "accept_edits", alias = "accept-edits")]
    AcceptEdits,
    /// No card but for what always asks; never widens the fence or lifts a read-only mode
    Bypass,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Approve {
    /// Allow the one call
    Once,
    /// Allow what the card asks for, for the rest of the session
    Session,
    /// Refuse, and record the refusal
    Deny,
    /// For a command: allow each program of its line anywhere for the session; other cards:
    /// as `session`
    Programs,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Register an MCP server with the daemon: it is kept across restarts and starts in the
    /// background (`codaris mcp list` shows when it is ready)
    #[command(
        after_help = "Examples:\n  codaris mcp add time --keyword clock -- uvx mcp-server-time\n  codaris mcp add docs --url http://127.0.0.1:3001/mcp --header 'Authorization: Bearer …'"
    )]
    Add(Box<McpAddArgs>),
    /// Every server: its state, transport, tools, tools held back and error
    List,
    /// The tools of one server, as the model calls them (`server__tool`)
    Tools {
        /// The server's name, as `codaris mcp list` shows it
        name: String,
    },
    /// Stop and forget a server added with `codaris mcp add` (configured ones are removed from
    /// the configuration file)
    Remove {
        /// The server's name
        name: String,
    },
    /// Stop a server and start it again
    Restart {
        /// The server's name
        name: String,
    },
    /// Switch a server on (kept across restarts)
    Enable {
        /// The server's name
        name: String,
    },
    /// Switch a server off: it is stopped and its tools leave the index (kept across restarts)
    Disable {
        /// The server's name
        name: String,
    },
    /// Accept a server's current tool definitions and launch, so none of its tools stays held
    /// back after a change
    Approve {
        /// The server's name
        name: String,
    },
}

/// `codaris scheduler ...`
#[derive(Debug, Subcommand)]
pub enum SchedulerCommand {
    /// The user's jobs and this directory's project jobs, with their schedule and next run
    List {
        /// Each job's prompt too (with --json)
        #[arg(long)]
        include_body: bool,
    },
    /// One job: its fields, prompt, last and next run, whether it is approved
    Show(SchedulerJob),
    /// A job's runs, newest first: run session, trigger, status, timing
    Runs {
        #[command(flatten)]
        job: SchedulerJob,
        /// At most N runs (default 20, at most 100)
        #[arg(long, value_name = "N", default_value_t = 20)]
        limit: u32,
    },
    /// Start one run now, in the background
    Run(SchedulerJob),
    /// Stop a job's run in flight
    Cancel(SchedulerJob),
    /// Stop a job running on its schedule
    Pause(SchedulerJob),
    /// Let a paused job run on its schedule again
    Resume(SchedulerJob),
    /// Approve a project job as its file is now (a changed file needs approving again)
    Approve(SchedulerJob),
    /// Move the clock of a codarisd started with CODARIS_SCHEDULER_CLOCK (for tests)
    #[command(hide = true)]
    Clock {
        /// The new instant, RFC 3339
        to: String,
    },
}

/// Which job a `codaris scheduler` command is about.
#[derive(Debug, clap::Args)]
pub struct SchedulerJob {
    /// The job's id: its file's basename
    pub job_id: String,
    /// `user` (<config dir>/scheduler) or `project` (./.codaris/scheduler)
    #[arg(long, default_value = "user")]
    pub scope: String,
}

/// `codaris mcp add NAME [OPTIONS] -- COMMAND [ARGS...]` or `codaris mcp add NAME --url URL`.
#[derive(Debug, Args)]
pub struct McpAddArgs {
    /// The server's name: 1–32 letters, digits, `-` and `_`, without `__` or a trailing `_`
    pub name: String,
    /// A streamable-HTTP server's endpoint (http or https) instead of a COMMAND
    #[arg(long, value_name = "URL", conflicts_with_all = ["command", "env", "cwd"])]
    pub url: Option<String>,
    /// A header sent to a --url server, as 'NAME: VALUE' (repeatable)
    #[arg(long = "header", value_name = "'K: V'", requires = "url")]
    pub headers: Vec<String>,
    /// An environment variable of the COMMAND, as KEY=VALUE (repeatable)
    #[arg(long = "env", value_name = "K=V")]
    pub env: Vec<String>,
    /// A word search ranks the server's tools by (repeatable)
    #[arg(long = "keyword", value_name = "W")]
    pub keywords: Vec<String>,
    /// Believe the server's tool annotations (a tool that says it only reads counts as one)
    #[arg(long)]
    pub trust: bool,
    /// `ask`: a permission card before every call of its tools [default: never]
    #[arg(long, value_name = "never|ask", value_parser = ["never", "ask"])]
    pub approval: Option<String>,
    /// Seconds the server may take from start to its tool list [default: 30]
    #[arg(long, value_name = "SECONDS")]
    pub startup_timeout: Option<f64>,
    /// Seconds one call of its tools may take [default: 120]
    #[arg(long, value_name = "SECONDS")]
    pub tool_timeout: Option<f64>,
    /// Tell the server the daemon's allowed folders as its MCP roots (a filesystem server then
    /// serves those instead of the folders on its command line)
    #[arg(long)]
    pub share_roots: bool,
    /// The COMMAND's working directory [default: the daemon's]; a relative one is taken from
    /// the current directory
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// The program that speaks MCP on its standard input and output, and its arguments
    #[arg(
        last = true,
        value_name = "COMMAND",
        required_unless_present = "url",
        num_args = 1..
    )]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum SharedCommand {
    /// The session's shared files: SHA-256, size and name
    List {
        /// The session id
        session: String,
    },
    /// Download one shared file
    Get {
        /// The session id
        session: String,
        /// The file: its SHA-256 (or a unique prefix of at least 8 digits), or its name
        file: String,
        /// Where to write it [default: its name, in the current directory]; an existing file
        /// is never replaced
        #[arg(short, long, value_name = "PATH")]
        output: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Grants in force (with --all, also spent and revoked ones)
    Grants {
        /// Only this session's grants
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Include spent and revoked grants
        #[arg(long)]
        all: bool,
    },
    /// Dispatch decisions, newest first
    Decisions {
        /// Only this session's decisions
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// At most this many
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: u32,
    },
    /// Write every record as JSON lines, the format `codaris audit replay --from` reads
    Export {
        /// Only this session's records
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// Write to this file instead of standard output
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Revoke a grant by id
    Revoke {
        /// The grant id, as `codaris ledger grants` shows it
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Decide every recorded request again and report what this policy decides differently;
    /// exits 1 on any difference
    Replay {
        /// Read a `codaris ledger export` file instead of a stopped daemon's state directory
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
        /// Print each decision's code and sentence
        #[arg(long)]
        explain: bool,
        /// Show at most this many differences in full
        #[arg(long, default_value_t = 5, value_name = "N")]
        show: usize,
        /// Decide every recorded call again with this candidate configuration's roots,
        /// allowlists and registries instead of the recorded ones, and list the decisions whose
        /// verdict would change, grouped (the candidate is judged as `codarisd check-config`
        /// judges a file; a bad one is refused and nothing is replayed)
        #[arg(long, value_name = "FILE", conflicts_with_all = ["explain", "show"])]
        config: Option<PathBuf>,
    },
    /// List the decisions the shadow configuration (`[policy] shadow`) decided differently,
    /// grouped; the live decisions stood
    Shadow {
        /// Read a `codaris ledger export` file instead of a stopped daemon's state directory
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
    },
    /// Check a stopped daemon's ledger is whole: every grant backed, the chain unbroken, and
    /// nothing cut off after the chain's head the daemon published in the configuration
    /// directory; exits 1 on any finding
    Verify {
        /// Show at most this many differences in full
        #[arg(long, default_value_t = 5, value_name = "N")]
        show: usize,
    },
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Read one request, or JSON lines of requests, on standard input; print one JSON decision
    /// per request
    Eval,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// List the notes: yours (`user:`, in the daemon's configuration directory) and the
    /// project's (`project:`, its `.codaris/memory`)
    List {
        /// Only `user` or `project` [default: both]
        #[arg(long, value_name = "SCOPE")]
        scope: Option<String>,
        /// The project whose `.codaris/memory` is read [default: the current directory]
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
    /// Print one note (`project:cluster/slurm.md`)
    Show {
        /// `scope:relative/path.md`
        path: String,
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
    /// Delete a note, or a folder with everything under it (never a scope's root)
    Rm {
        /// `scope:relative/path.md` or a folder
        path: String,
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// List them: the built-in `general`, `<config dir>/agents/*.md` and the project's
    /// `.codaris/agents/*.md` (which win), and any file left out with why
    List {
        /// The project whose `.codaris/agents` is read [default: the current directory]
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Rank tools for a query: against the daemon's index, or offline over a catalogue file
    Search(ToolsSearchArgs),
    /// List the daemon's index with each tool's state
    List,
    /// The always-on surface sent to the model every round, with each tool's schema size in
    /// tokens (cl100k) and the total against the budget
    Surface,
    /// Switch a tool, skill or reference on: it can be found and bound again
    Enable {
        /// The name, as `codaris tools list` shows it
        name: String,
    },
    /// Switch a tool, skill or reference off: it is never offered, found or bound
    Disable {
        /// The name, as `codaris tools list` shows it
        name: String,
    },
    /// Print recall@1/3/5 and MRR of the ranking over an evaluation set, overall and per style;
    /// with --from-ledger, over the searches of your own sessions
    Eval(ToolsEvalArgs),
}

#[derive(Debug, Args)]
pub struct ToolsSearchArgs {
    /// Search this catalogue (JSON lines) offline instead of asking the daemon
    #[arg(long, value_name = "FILE.jsonl")]
    pub catalog: Option<PathBuf>,
    /// Run every query of this file (JSON lines) instead of one QUERY; needs --catalog
    #[arg(long, value_name = "FILE.jsonl", requires = "catalog")]
    pub queries: Option<PathBuf>,
    /// any, tool (core and MCP), core, mcp, skill or reference [default: any; with --queries, each line's kind]
    #[arg(long, value_name = "KIND")]
    pub kind: Option<String>,
    /// At most this many hits per query [default: 5]
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Say why each hit ranked where it did: what each query word stood for, the words each hit
    /// matched and where, and whether `search_tools` would bind it
    #[arg(long, conflicts_with = "queries")]
    pub explain: bool,
    /// The query, in plain words
    #[arg(
        value_name = "QUERY",
        required_unless_present = "queries",
        conflicts_with = "queries"
    )]
    pub query: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ToolsEvalArgs {
    /// Catalogue to rank over [default: the evaluation set built into codaris; with
    /// --from-ledger, the daemon's index]
    #[arg(long, value_name = "FILE.jsonl")]
    pub catalog: Option<PathBuf>,
    /// Queries with their acceptable answers [default: the built-in set]
    #[arg(long, value_name = "FILE.jsonl", conflicts_with = "from_ledger")]
    pub queries: Option<PathBuf>,
    /// Measure on your own work: every search in the state directory's sessions that the model
    /// followed with a call to one of its hits (within the turns its hits stay bound) becomes a
    /// query whose answer is the name called
    #[arg(long)]
    pub from_ledger: bool,
    /// With --from-ledger, also save the mined queries as a query file (for --queries)
    #[arg(long, value_name = "FILE.jsonl", requires = "from_ledger")]
    pub write: Option<PathBuf>,
    /// Also measure a plain BM25 ranking over name and description, side by side
    #[arg(long)]
    pub baseline: bool,
}
