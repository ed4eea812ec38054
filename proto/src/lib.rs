//! The Codaris gRPC API, `codaris.v1`, generated from `proto/codaris/v1/*.proto`.
//!
//! This crate is wire types and service stubs only. Conversions between these messages and the
//! domain types of `codaris-policy` or `codaris-index` live in the daemon and the CLI, never here.

/// Generated messages, clients and servers of `codaris.v1`.
#[allow(clippy::all, clippy::pedantic, missing_debug_implementations)]
pub mod v1 {
    tonic::include_proto!("codaris.v1");
}

/// The API versions this build speaks, oldest first.
pub const API_VERSIONS: &[u32] = &[1];

/// The encoded `FileDescriptorSet` of the whole API, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("codaris_descriptor");
