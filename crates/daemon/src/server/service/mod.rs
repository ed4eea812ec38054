//! gRPC handlers: decode the request to domain values, call the owner of the capability, encode.

pub mod daemon;
pub mod ledger;
pub mod mcp;
pub mod memory;
pub mod scheduler;
pub mod sessions;
pub mod tools;

use std::pin::Pin;

use tokio_stream::Stream;

/// The stream type of every server-streaming method.
pub type ResponseStream<T> = Pin<Box<dyn Stream<Item = Result<T, tonic::Status>> + Send>>;
