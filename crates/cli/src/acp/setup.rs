//! The setup of each editor, printed by `codaris acp --help` and kept word for word in
//! docs/acp.md (a test there holds them together).

/// What `codaris acp --help` prints after its flags.
pub const SETUP: &str = r#"Editor setup (the editor starts `codaris acp` itself; codarisd starts on first use):

  Zed, settings.json:
    "agent_servers": { "Codaris": { "type": "custom", "command": "codaris", "args": ["acp"], "env": {} } }

  JetBrains AI Assistant (2025.2+), ~/.jetbrains/acp.json:
    { "agent_servers": { "Codaris": { "command": "codaris", "args": ["acp"], "env": {} } } }

  Neovim, CodeCompanion (adapters.acp in its setup):
    codaris = function() return { name = "codaris", formatted_name = "Codaris", type = "acp", roles = { llm = "assistant", user = "user" }, commands = { default = { "codaris", "acp" } }, defaults = { mcpServers = {}, timeout = 20000 }, parameters = { protocolVersion = 1, clientCapabilities = {}, clientInfo = { name = "CodeCompanion.nvim", version = "1.0.0" } }, handlers = { setup = function() return true end, auth = function() return true end, form_messages = function(self, messages, capabilities) return require("codecompanion.adapters.acp.helpers").form_messages(self, messages, capabilities) end, on_exit = function() end } } end,

  Emacs, agent-shell (M-x codaris-agent-shell):
    (defun codaris-agent-shell () (interactive) (agent-shell--dwim :new-shell t :config (agent-shell-make-agent-config :identifier 'codaris :mode-line-name "Codaris" :buffer-name "Codaris" :shell-prompt "Codaris> " :shell-prompt-regexp "Codaris> " :client-maker (lambda (buffer) (agent-shell--make-acp-client :command "codaris" :command-params '("acp") :context-buffer buffer)))))

Tools run inside Codaris's fence and every decision goes to its ledger: the editor's file and
terminal methods are not used. A card answered in the editor is recorded as `acp:<editor>`.
More in docs/acp.md."#;

#[cfg(test)]
mod tests {
    #[test]
    fn the_docs_carry_the_setup_word_for_word() {
        let docs = include_str!("../../../../docs/acp.md");
        assert!(
            docs.contains(super::SETUP),
            "docs/acp.md lost `codaris acp --help`'s setup"
        );
    }
}
