use codaris_proto::v1;
use codaris_proto::v1::tools_server::Tools;
use tonic::{Request, Response, Status};

use crate::error::DaemonError;

#[derive(Debug, Default)]
pub struct ToolsService;

const INDEX_MISSING: DaemonError = DaemonError::NotYet {
    capability: "the tool index",
    reason: "searching, listing and switching tools is not part of this codarisd build yet",
};

#[tonic::async_trait]
impl Tools for ToolsService {
    async fn search_tools(
        &self,
        _request: Request<v1::SearchToolsRequest>,
    ) -> Result<Response<v1::SearchToolsResponse>, Status> {
        Err(INDEX_MISSING.into())
    }

    async fn list_tools(
        &self,
        _request: Request<v1::ListToolsRequest>,
    ) -> Result<Response<v1::ListToolsResponse>, Status> {
        Err(INDEX_MISSING.into())
    }

    async fn set_tool_enabled(
        &self,
        _request: Request<v1::SetToolEnabledRequest>,
    ) -> Result<Response<v1::ToolInfo>, Status> {
        Err(INDEX_MISSING.into())
    }
}
