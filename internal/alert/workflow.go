package alert

import (
	"encoding/json"
	"fmt"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/workflow"
)

// workflowReport is the end of a workflow node's fire for the engine's inbox (nil for any other fire): the
// node succeeded when every item of the fire succeeded (after retries, after async completion).
func workflowReport(f dispatch.Fire, sum Summary) []byte {
	if sum.Source != string(ejserver.SourceWorkflow) {
		return nil
	}
	m := workflow.Message{Kind: workflow.MsgFire, Job: f.Job, Fire: f.Key, Items: len(sum.Items)}
	outputs := map[int]json.RawMessage{}
	for _, r := range sum.Items {
		if r.Outcome == dispatch.OutcomeSucceeded {
			m.Succeeded++
		} else if m.Error == "" {
			m.Error = fmt.Sprintf("item %d: %s", r.Item, r.Outcome)
			if r.Error != "" {
				m.Error += ": " + r.Error
			}
		}
		if len(r.Output) > 0 {
			outputs[r.Item] = r.Output
		}
	}
	out, ok := workflow.NodeOutput(outputs)
	if !ok && m.Error == "" {
		m.Error = fmt.Sprintf("the items' outputs together exceed %d bytes: the node's output was dropped", workflow.MaxOutputSize)
	}
	m.Output = out
	b, _ := json.Marshal(m)
	return b
}

// asyncOutput is an async completion's output as a node's item output: the text if it is JSON, else the text
// as a JSON string.
func asyncOutput(text string) json.RawMessage {
	if text == "" {
		return nil
	}
	if json.Valid([]byte(text)) {
		return workflow.ItemOutput(`{"output":` + text + `}`)
	}
	b, _ := json.Marshal(text)
	return workflow.ItemOutput(`{"output":` + string(b) + `}`)
}
