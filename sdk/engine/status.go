package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// errDomain is the google.rpc.ErrorInfo domain that marks a status as carrying a catalogue code.
const errDomain = "reelforge"

// toStatus turns an error returned by an Engine or Host implementation into a gRPC status error
// that keeps its catalogue code. The status code is Code.GRPC(); a google.rpc.ErrorInfo detail
// (domain "reelforge", reason = the code) carries the code name, the public message, the op, the
// internal cause as text (for the other side's logs, never for clients), public details as JSON,
// and the HTTP status and RetryAfter overrides. An error without a code becomes UNKNOWN_ERROR;
// context.Canceled and context.DeadlineExceeded become WORKFLOW_CANCELLED and WORKFLOW_TIMEOUT.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	e := errcode.As(err)
	if e == nil {
		switch {
		case errors.Is(err, context.Canceled):
			e = errcode.E("", errcode.WorkflowCancelled, "", err)
		case errors.Is(err, context.DeadlineExceeded):
			e = errcode.E("", errcode.WorkflowTimeout, "", err)
		default:
			e = errcode.E("", errcode.Unknown, "", err)
		}
	}
	md := map[string]string{}
	if e.Msg != "" {
		md["message"] = e.Msg
	}
	if e.Op != "" {
		md["op"] = e.Op
	}
	if e.Err != nil {
		md["cause"] = e.Err.Error()
	}
	if e.Details != nil {
		if b, jerr := json.Marshal(e.Details); jerr == nil {
			md["details"] = string(b)
		}
	}
	if e.Status != 0 {
		md["http_status"] = strconv.Itoa(e.Status)
	}
	if e.RetryAfter != 0 {
		md["retry_after"] = strconv.Itoa(e.RetryAfter)
	}
	st := status.New(e.Code.GRPC(), e.Error())
	if withInfo, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: string(e.Code), Domain: errDomain, Metadata: md}); derr == nil {
		st = withInfo
	}
	return st.Err()
}

// fromStatus rebuilds an *errcode.Error from an error returned by a gRPC call to peer ("engine
// plugin" or "host"). A status carrying a catalogue code gives back an *errcode.Error with the
// same Code, Msg, Op, Details, Status and RetryAfter (its Err is the remote cause as text).
// Statuses without a code are mapped by gRPC code:
//   - Canceled: WORKFLOW_CANCELLED wrapping context.Canceled (errors.Is works);
//   - DeadlineExceeded: WORKFLOW_TIMEOUT wrapping context.DeadlineExceeded;
//   - Unavailable (the peer process died or its connection broke) and anything else that is not a
//     status: EXTERNAL_SERVICE_ERROR, "<peer> unavailable";
//   - other codes: UNKNOWN_ERROR.
func fromStatus(op, peer string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.Canceled) {
			return errcode.E(op, errcode.WorkflowCancelled, "", err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return errcode.E(op, errcode.WorkflowTimeout, "", err)
		}
		return errcode.E(op, errcode.ExternalService, peer+" unavailable", err)
	}
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != errDomain {
			continue
		}
		md := info.GetMetadata()
		e := &errcode.Error{Op: op, Code: errcode.Code(info.GetReason()), Msg: md["message"]}
		if o := md["op"]; o != "" {
			e.Op = op + ": " + o
		}
		if c := md["cause"]; c != "" {
			e.Err = errors.New(c)
		}
		if d := md["details"]; d != "" {
			e.Details = json.RawMessage(d)
		}
		e.Status, _ = strconv.Atoi(md["http_status"])
		e.RetryAfter, _ = strconv.Atoi(md["retry_after"])
		// Keep errors.Is(err, context.Canceled) working for cancellations that crossed the wire.
		var ctxErr error
		switch st.Code() {
		case codes.Canceled:
			ctxErr = context.Canceled
		case codes.DeadlineExceeded:
			ctxErr = context.DeadlineExceeded
		}
		if ctxErr != nil {
			e.Err = errors.Join(ctxErr, e.Err)
		}
		return e
	}
	switch st.Code() {
	case codes.OK:
		return nil
	case codes.Canceled:
		return errcode.E(op, errcode.WorkflowCancelled, "", context.Canceled)
	case codes.DeadlineExceeded:
		return errcode.E(op, errcode.WorkflowTimeout, "", context.DeadlineExceeded)
	case codes.Unavailable:
		return errcode.E(op, errcode.ExternalService, peer+" unavailable", err)
	default:
		return errcode.E(op, errcode.Unknown, "", err)
	}
}
