//! A2A 1.0's protocol buffers (`proto/lf/a2a/v1/a2a.proto`, compiled by
//! `build.rs`): the messages of the gRPC binding, with ProtoJSON serde
//! (pbjson), the server trait `http::a2a::grpc` implements and the client
//! `a2a::grpc` dials with.

#![allow(clippy::all, clippy::pedantic, missing_docs, unreachable_pub)]

pub(crate) mod wkt;

include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.rs"));
include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.serde.rs"));
