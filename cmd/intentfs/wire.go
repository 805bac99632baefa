package main

import (
	"github.com/intentfs/intentfs/control"
	"github.com/intentfs/intentfs/internal/accept"
	"github.com/intentfs/intentfs/internal/history"
	"github.com/intentfs/intentfs/internal/workflow"
)

// A command runs either through a mount's daemon, over the control
// socket in the control package's wire types, or here on the source
// with the internal packages' own types. These convert between the two.

func intentRequestToWire(r workflow.Request) control.IntentRequest {
	out := control.IntentRequest{Action: r.Action, ID: r.ID, Reason: r.Reason, Add: r.Add, Remove: r.Remove, Force: r.Force}
	if r.New != nil {
		n := control.NewIntent(*r.New)
		out.New = &n
	}
	for _, c := range r.Results {
		out.Results = append(out.Results, control.AcceptanceResult(c))
	}
	return out
}

func revertPlanFromWire(p *control.RevertPlan) *history.Plan {
	if p == nil {
		return nil
	}
	out := &history.Plan{AlreadyReverted: p.AlreadyReverted}
	if p.Steps != nil {
		out.Steps = make([]history.Step, len(p.Steps))
		for i, s := range p.Steps {
			out.Steps[i] = history.Step(s)
		}
	}
	return out
}

func acceptedFromWire(in []control.Accepted) []accept.Result {
	if in == nil {
		return nil
	}
	out := make([]accept.Result, len(in))
	for i, a := range in {
		out[i] = accept.Result(a)
	}
	return out
}
