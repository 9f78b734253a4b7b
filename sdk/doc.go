// Package sdk is what a Reelforge engine plugin imports. Start here:
//
//   - sdk/engine: the Engine interface to implement (Info, Run, Callback, Cancel, Health), the
//     Host it calls back (ReportStep, ReportProgress, CreateJob, WaitJob, Search, Generate),
//     Serve for the plugin's main, and NewClient, which the host uses to launch plugins.
//   - sdk/errcode: the error catalogue. Return *errcode.Error values: their code survives the
//     process boundary.
//   - sdk/enginetest: New runs an engine through the real gRPC adapters in one process with a
//     recording Host; Conformance checks it against the contract.
//   - sdk/proto/engine/v1/engine.proto: the wire protocol, for plugins not written in Go.
//
// sdk/README.md walks from an empty folder to a working engine.
package sdk
