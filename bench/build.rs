//! Generates the gRPC baseline's client and server from `proto/provider.proto`, with a protoc
//! from `protoc-bin-vendored` so that the build needs nothing installed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // SAFETY: build scripts are single-threaded; prost-build reads PROTOC from the environment.
    unsafe { std::env::set_var("PROTOC", protoc) };
    tonic_prost_build::configure()
        .btree_map(".")
        .compile_protos(&["proto/provider.proto"], &["proto"])?;
    println!("cargo:rerun-if-changed=proto/provider.proto");
    Ok(())
}
