//! `codaris.v1.Tools`: search, list and switch the entries of the tool index. Each handler
//! decodes the request, asks the [`ToolRegistry`], and encodes the answer.

use std::sync::Arc;

use codaris_index::{DEFAULT_LIMIT, Entry, Hit, KindFilter};
use codaris_proto::v1;
use codaris_proto::v1::tools_server::Tools;
use tonic::{Request, Response, Status};

use crate::error::DaemonError;
use crate::toolset::registry::ToolRegistry;

#[derive(Debug, Clone)]
pub struct ToolsService {
    pub registry: Arc<ToolRegistry>,
}

#[tonic::async_trait]
impl Tools for ToolsService {
    async fn search_tools(
        &self,
        request: Request<v1::SearchToolsRequest>,
    ) -> Result<Response<v1::SearchToolsResponse>, Status> {
        let request = request.into_inner();
        let kind = kind_filter(&request.kind)?;
        let limit = match request.limit {
            0 => DEFAULT_LIMIT,
            n => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let (outcome, explanation, explanation_json) = if request.explain {
            let (outcome, explained) = self.registry.search_explained(&request.query, kind, limit);
            let json = serde_json::to_string(&explained).unwrap_or_default();
            (outcome, codaris_index::render_explanation(&explained), json)
        } else {
            let outcome = self.registry.search(&request.query, kind, limit);
            (outcome, String::new(), String::new())
        };
        Ok(Response::new(v1::SearchToolsResponse {
            hits: outcome.hits().iter().map(search_hit).collect(),
            text: codaris_index::render(&outcome),
            explanation,
            explanation_json,
        }))
    }

    async fn list_tools(
        &self,
        _request: Request<v1::ListToolsRequest>,
    ) -> Result<Response<v1::ListToolsResponse>, Status> {
        let index = self.registry.snapshot();
        Ok(Response::new(v1::ListToolsResponse {
            tools: index.entries().iter().map(tool_info).collect(),
        }))
    }

    async fn set_tool_enabled(
        &self,
        request: Request<v1::SetToolEnabledRequest>,
    ) -> Result<Response<v1::ToolInfo>, Status> {
        let request = request.into_inner();
        if request.name.trim().is_empty() {
            return Err(DaemonError::InvalidArgument {
                field: "name",
                reason: "is empty; give the name `codaris tools list` shows".to_owned(),
            }
            .into());
        }
        let entry = self.registry.set_enabled(&request.name, request.enabled)?;
        tracing::info!(name = %entry.name, enabled = entry.enabled, "tool switched");
        Ok(Response::new(tool_info(&entry)))
    }
}

/// `any` when empty; otherwise one of the kind words.
fn kind_filter(kind: &str) -> Result<KindFilter, DaemonError> {
    if kind.is_empty() {
        return Ok(KindFilter::Any);
    }
    kind.parse().map_err(|_| DaemonError::InvalidArgument {
        field: "kind",
        reason: format!("must be one of any, tool, core, mcp, skill or reference, not `{kind}`"),
    })
}

fn search_hit(hit: &Hit) -> v1::SearchHit {
    v1::SearchHit {
        name: hit.name.clone(),
        kind: hit.kind.as_str().to_owned(),
        description: hit.description.clone(),
        score: hit.score,
        slash: hit.slash.clone(),
        path: hit.path.clone().unwrap_or_default(),
        bindable: hit.bindable,
        likely: hit.likely,
    }
}

fn tool_info(entry: &Entry) -> v1::ToolInfo {
    v1::ToolInfo {
        name: entry.name.clone(),
        kind: entry.kind.as_str().to_owned(),
        server: entry.server.clone().unwrap_or_default(),
        description: entry.description.clone(),
        enabled: entry.enabled,
        slash: entry.slash.clone(),
        // This build registers only skills and references; they are read with `read_file`, not
        // called, so no permission class applies to them.
        permission: String::new(),
        path: entry.path.clone().unwrap_or_default(),
    }
}
