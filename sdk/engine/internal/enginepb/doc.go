// Package enginepb holds the Go code generated from sdk/proto/engine/v1/engine.proto by
// sdk/proto/generate.sh. Only package engine uses it: plugin authors never see protobuf types.
package enginepb
