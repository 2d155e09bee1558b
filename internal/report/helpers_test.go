package report

import "cwm/internal/trace"

func appendFrame(f trace.Frame) []byte { return trace.AppendFrame(nil, f) }
