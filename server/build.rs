//! Compiles A2A 1.0's normative `a2a.proto` (`../proto/`, see its README)
//! into the gRPC binding's messages, service and client, with the `protoc`
//! of the `protoc-bin-vendored` crate: nothing is downloaded at build time.
//! pbjson adds ProtoJSON serde to the messages (A2A 1.0's JSON form), so
//! the binding maps a message to the JSON the other bindings handle.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../proto");
    let proto = root.join("lf/a2a/v1/a2a.proto");
    println!("cargo:rerun-if-changed={}", root.display());
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptors = out.join("a2a_descriptor.bin");
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    let wkt = protoc_bin_vendored::include_path()?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .build_transport(false)
        .file_descriptor_set_path(&descriptors)
        .compile_well_known_types(true)
        // JSON values with ordered fields (see a2a/proto/wkt.rs); the other
        // well-known types (Timestamp, Empty) are pbjson-types'.
        .extern_path(".google.protobuf.Struct", "crate::a2a::proto::wkt::Struct")
        .extern_path(".google.protobuf.Value", "crate::a2a::proto::wkt::Value")
        .extern_path(
            ".google.protobuf.ListValue",
            "crate::a2a::proto::wkt::ListValue",
        )
        .extern_path(".google.protobuf", "::pbjson_types")
        .compile_with_config(config, &[proto], &[root.clone(), wkt])?;
    let set = std::fs::read(&descriptors)?;
    pbjson_build::Builder::new()
        .register_descriptors(&set)?
        .ignore_unknown_fields()
        .build(&[".lf.a2a.v1"])?;
    Ok(())
}
