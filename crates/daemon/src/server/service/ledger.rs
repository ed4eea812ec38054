use std::sync::Arc;

use codaris_ledger::Ledger;
use codaris_proto::v1;
use codaris_proto::v1::ledger_server;
use tonic::{Request, Response, Status};

use super::ResponseStream;
use crate::error::DaemonError;
use crate::server::convert::{decision_record_wire, grant_wire};
use crate::sessions::store::now_ms;

/// Decisions listed when the request names no limit.
const DEFAULT_DECISIONS: usize = 100;

#[derive(Debug)]
pub struct LedgerService {
    pub ledger: Arc<Ledger>,
}

/// Runs blocking ledger work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, DaemonError> + Send + 'static,
) -> Result<T, Status> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(Status::from),
        Err(join) => Err(Status::internal(format!("ledger task failed: {join}"))),
    }
}

#[tonic::async_trait]
impl ledger_server::Ledger for LedgerService {
    type ExportLedgerStream = ResponseStream<v1::ExportChunk>;

    async fn list_grants(
        &self,
        request: Request<v1::ListGrantsRequest>,
    ) -> Result<Response<v1::ListGrantsResponse>, Status> {
        let request = request.into_inner();
        let ledger = self.ledger.clone();
        let grants = blocking(move || {
            let session = (!request.session_id.is_empty()).then_some(request.session_id);
            let (records, corrupt) = ledger.grants(session.as_deref())?;
            report(&corrupt);
            let mut listed = Vec::new();
            for record in &records {
                // In force: active and standing on its answered card, as dispatch reads it.
                if request.include_inactive
                    || (record.is_active() && ledger.grant_stands(record)?)
                {
                    listed.push(grant_wire(record));
                }
            }
            Ok(listed)
        })
        .await?;
        Ok(Response::new(v1::ListGrantsResponse { grants }))
    }

    async fn list_decisions(
        &self,
        request: Request<v1::ListDecisionsRequest>,
    ) -> Result<Response<v1::ListDecisionsResponse>, Status> {
        let request = request.into_inner();
        let ledger = self.ledger.clone();
        let limit = match request.limit {
            0 => DEFAULT_DECISIONS,
            n => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let decisions = blocking(move || {
            let session = (!request.session_id.is_empty()).then_some(request.session_id);
            // Reads the `limit` newest and no more, however long the ledger.
            let (records, corrupt) = ledger.newest_decisions(session.as_deref(), limit)?;
            report(&corrupt);
            Ok(records.iter().map(decision_record_wire).collect())
        })
        .await?;
        Ok(Response::new(v1::ListDecisionsResponse { decisions }))
    }

    async fn export_ledger(
        &self,
        request: Request<v1::ExportLedgerRequest>,
    ) -> Result<Response<Self::ExportLedgerStream>, Status> {
        let session_id = request.into_inner().session_id;
        let ledger = self.ledger.clone();
        let chunks = blocking(move || {
            let session = (!session_id.is_empty()).then_some(session_id);
            let (lines, corrupt) = ledger.export(session.as_deref())?;
            if let Some(first) = corrupt.first() {
                // An export that silently dropped a record would replay clean: refuse instead.
                return Err(DaemonError::CorruptRecord {
                    detail: first.to_string(),
                    count: corrupt.len(),
                });
            }
            let mut chunks = Vec::new();
            let mut chunk = Vec::new();
            for line in &lines {
                serde_json::to_writer(&mut chunk, line)?;
                chunk.push(b'\n');
                if chunk.len() > 64 * 1024 {
                    chunks.push(std::mem::take(&mut chunk));
                }
            }
            if !chunk.is_empty() {
                chunks.push(chunk);
            }
            Ok(chunks)
        })
        .await?;
        let stream = tokio_stream::iter(
            chunks
                .into_iter()
                .map(|jsonl| Ok(v1::ExportChunk { jsonl })),
        );
        Ok(Response::new(Box::pin(stream)))
    }

    async fn revoke_grant(
        &self,
        request: Request<v1::RevokeGrantRequest>,
    ) -> Result<Response<v1::Grant>, Status> {
        let id = request.into_inner().id;
        let ledger = self.ledger.clone();
        let record = blocking(move || Ok(ledger.revoke(&id, now_ms())?)).await?;
        tracing::info!(grant = %record.id, "grant revoked");
        Ok(Response::new(grant_wire(&record)))
    }
}

fn report(corrupt: &[codaris_ledger::Corrupt]) {
    for record in corrupt {
        tracing::error!(%record, "a ledger record does not decode; it is skipped and grants nothing");
    }
}
