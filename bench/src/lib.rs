//! The pieces of the benchmark harness that its two binaries share: the gRPC protocol of the
//! baseline plugin and the conversion of plinth's property values to and from it.

pub mod proto {
    //! Generated from `proto/provider.proto`.
    tonic::include_proto!("plinth.bench.v1");
}

pub mod wire;
