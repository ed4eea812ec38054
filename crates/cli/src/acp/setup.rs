//! The one-line setup of each editor, printed by `codaris acp --help` and kept word for word
//! in docs/acp.md.

/// What `codaris acp --help` prints after its flags.
pub const SETUP: &str = r#"Editor setup (each editor starts `codaris acp` itself; the daemon starts on first use):

  Zed, in settings.json:
    "agent_servers": { "Codaris": { "type": "custom", "command": "codaris", "args": ["acp"], "env": {} } }

  JetBrains (AI Assistant 2025.2+), in ~/.jetbrains/acp.json:
    { "agent_servers": { "Codaris": { "command": "codaris", "args": ["acp"], "env": {} } } }

  Neovim, CodeCompanion:
    require("codecompanion").setup({ adapters = { acp = { codaris = function() return require("codecompanion.adapters").extend("gemini_cli", { name = "codaris", commands = { default = { "codaris", "acp" } } }) end } } })

  Emacs, agent-shell:
    (setq agent-shell-agent-configs (list (agent-shell-make-agent-config :buffer-name "Codaris" :client-maker (lambda (buffer) (agent-shell--make-acp-client :command "codaris" :command-params '("acp") :context-buffer buffer)))))

Tools run inside Codaris's fence and every decision is in its ledger; the editor's file and
terminal methods are not used. Cards answered in the editor are recorded as `acp:<editor>`.
See docs/acp.md."#;
