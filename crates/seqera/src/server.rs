//! The `seqera` MCP server: the tools of this crate behind rmcp's `ServerHandler`, served over
//! stdin/stdout for the daemon (`codarisd mcp-server seqera`). A tool's failure is a result
//! with `isError: true` (the model reads why); a tool the server does not have is a protocol
//! error.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::build::BuildContainerImage;
use crate::launch::LaunchPipeline;
use crate::lint::LintNextflow;
use crate::platform::PlatformTool;
use crate::{SeqeraSetup, SeqeraTool};

/// The name the server gives in its `serverInfo`.
pub const SERVER_NAME: &str = "codaris-seqera";

/// Every tool of the server, in the order it lists them.
pub fn tools(setup: &SeqeraSetup) -> Vec<Arc<dyn SeqeraTool>> {
    let mut tools: Vec<Arc<dyn SeqeraTool>> = vec![
        Arc::new(BuildContainerImage::new(setup)),
        Arc::new(LintNextflow::new(setup)),
    ];
    for tool in PlatformTool::all(setup) {
        tools.push(Arc::new(tool));
    }
    tools.push(Arc::new(LaunchPipeline::new(setup)));
    tools
}

/// The server's handler.
#[derive(Clone)]
pub struct SeqeraServer {
    tools: Arc<Vec<Arc<dyn SeqeraTool>>>,
}

impl std::fmt::Debug for SeqeraServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeqeraServer")
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl SeqeraServer {
    pub fn new(setup: &SeqeraSetup) -> SeqeraServer {
        SeqeraServer::with_tools(tools(setup))
    }

    pub fn with_tools(tools: Vec<Arc<dyn SeqeraTool>>) -> SeqeraServer {
        SeqeraServer {
            tools: Arc::new(tools),
        }
    }

    fn definitions(&self) -> Vec<Tool> {
        self.tools
            .iter()
            .map(|tool| {
                let schema = match tool.input_schema() {
                    Value::Object(map) => map,
                    // A schema that is not an object is a bug of ours; the client still gets
                    // an object schema rather than a broken listing.
                    _ => {
                        let mut map = JsonObject::new();
                        map.insert("type".to_owned(), Value::from("object"));
                        map
                    }
                };
                Tool::new(tool.name(), tool.description(), Arc::new(schema)).with_annotations(
                    ToolAnnotations::new()
                        .read_only(tool.read_only())
                        .destructive(false),
                )
            })
            .collect()
    }
}

impl ServerHandler for SeqeraServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.definitions()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let Some(tool) = self.tools.iter().find(|tool| tool.name() == name) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "the seqera server has no tool `{}`",
                    crate::args::cut(name, 100)
                ),
                None,
            ));
        };
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let result = match tool.call(&args).await {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(failure) => CallToolResult::error(vec![ContentBlock::text(failure.0)]),
        };
        Ok(CallToolResponse::from(result))
    }
}

/// Serves `setup`'s tools over stdin/stdout until the client closes the connection.
pub async fn serve_stdio(setup: SeqeraSetup) -> std::io::Result<()> {
    serve(setup, rmcp::transport::io::stdio()).await
}

/// Serves `setup`'s tools over `transport` (stdio, or a duplex pipe in tests) until it closes.
pub async fn serve<T, E, A>(setup: SeqeraSetup, transport: T) -> std::io::Result<()>
where
    T: rmcp::transport::IntoTransport<RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let running = SeqeraServer::new(&setup)
        .serve(transport)
        .await
        .map_err(|err| std::io::Error::other(format!("the seqera MCP handshake failed: {err}")))?;
    running
        .waiting()
        .await
        .map_err(|err| std::io::Error::other(format!("the seqera MCP server stopped: {err}")))?;
    Ok(())
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
