//! Compiles `codaris/v1/*.proto` with protox (a pure-Rust protobuf compiler), so the build needs no
//! system `protoc`. The encoded descriptor set is kept in `OUT_DIR` for server reflection.

use std::path::PathBuf;

const PROTOS: &[&str] = &[
    "codaris/v1/types.proto",
    "codaris/v1/daemon.proto",
    "codaris/v1/sessions.proto",
    "codaris/v1/tools.proto",
    "codaris/v1/ledger.proto",
    "codaris/v1/mcp.proto",
    "codaris/v1/scheduler.proto",
    "codaris/v1/memory.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={proto}");
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptors = protox::compile(PROTOS, ["."])?;
    let descriptor_path = out_dir.join("codaris_descriptor.bin");
    std::fs::write(
        &descriptor_path,
        prost::Message::encode_to_vec(&descriptors),
    )?;
    tonic_prost_build::configure()
        .file_descriptor_set_path(&descriptor_path)
        .skip_protoc_run()
        .compile_protos(PROTOS, &["."])?;
    Ok(())
}
