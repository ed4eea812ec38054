use codaris_proto::v1;
use codaris_proto::v1::ledger_server::Ledger;
use tonic::{Request, Response, Status};

use super::ResponseStream;
use crate::error::DaemonError;

#[derive(Debug, Default)]
pub struct LedgerService;

const LEDGER_MISSING: DaemonError = DaemonError::NotYet {
    capability: "the grant and decision ledger",
    reason: "recording and listing grants and decisions is not part of this codarisd build yet",
};

#[tonic::async_trait]
impl Ledger for LedgerService {
    type ExportLedgerStream = ResponseStream<v1::ExportChunk>;

    async fn list_grants(
        &self,
        _request: Request<v1::ListGrantsRequest>,
    ) -> Result<Response<v1::ListGrantsResponse>, Status> {
        Err(LEDGER_MISSING.into())
    }

    async fn list_decisions(
        &self,
        _request: Request<v1::ListDecisionsRequest>,
    ) -> Result<Response<v1::ListDecisionsResponse>, Status> {
        Err(LEDGER_MISSING.into())
    }

    async fn export_ledger(
        &self,
        _request: Request<v1::ExportLedgerRequest>,
    ) -> Result<Response<Self::ExportLedgerStream>, Status> {
        Err(LEDGER_MISSING.into())
    }

    async fn revoke_grant(
        &self,
        _request: Request<v1::RevokeGrantRequest>,
    ) -> Result<Response<v1::Grant>, Status> {
        Err(LEDGER_MISSING.into())
    }
}
