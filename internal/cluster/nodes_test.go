package cluster

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ejserver/ejserver"
)

// encodeLines is the running node's format written line by line, as encode wrote it before it built the
// bytes in one buffer: the oracle encode is checked against.
func encodeLines(r Running) []byte {
	var b strings.Builder
	b.WriteString("jobInstanceId: " + r.InstanceID + "\n")
	b.WriteString("executionId: " + r.ExecutionID + "\n")
	b.WriteString("taskId: " + rangedOracle(r.TaskID) + "\n")
	b.WriteString("source: " + string(r.Source) + "\n")
	b.WriteString("scheduledAt: " + r.ScheduledAt.UTC().Format(time.RFC3339Nano) + "\n")
	if r.JobParameter != "" {
		p, _ := json.Marshal(r.JobParameter)
		b.WriteString("jobParameter: " + string(p) + "\n")
	}
	if r.Async {
		b.WriteString("async: true\n")
	}
	if r.Fire != "" {
		b.WriteString("fire: " + r.Fire + "\n")
	}
	if len(r.Workflow) > 0 {
		b.WriteString("workflow: " + string(r.Workflow) + "\n")
	}
	return []byte(b.String())
}

// rangedOracle is a task id as the running node writes it (items as ranges), built the plain way.
func rangedOracle(id string) string {
	f := strings.Split(id, "@-@")
	if len(f) < 3 {
		return id
	}
	var items []int
	for _, s := range strings.Split(f[1], ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || strconv.Itoa(n) != s {
			return id
		}
		items = append(items, n)
	}
	var out []string
	for i := 0; i < len(items); {
		j := i
		for j+1 < len(items) && items[j+1] == items[j]+1 {
			j++
		}
		if j-i >= 2 {
			out = append(out, strconv.Itoa(items[i])+"-"+strconv.Itoa(items[j]))
		} else {
			for k := i; k <= j; k++ {
				out = append(out, strconv.Itoa(items[k]))
			}
		}
		i = j + 1
	}
	f[1] = strings.Join(out, ",")
	return strings.Join(f, "@-@")
}

// wideRunning is the running node of an item of a wide fire: its task id lists the 667 items its peer runs.
func wideRunning() Running {
	items := make([]int, 667)
	for i := range items {
		items[i] = i
	}
	return Running{InstanceID: "127.0.0.1@-@4242", ExecutionID: ejserver.NewExecutionID(),
		TaskID: ejserver.TaskID("fanout-00000", items, false, "127.0.0.1@-@4242"),
		Source: ejserver.SourceNormal, ScheduledAt: time.Date(2026, 11, 25, 6, 0, 10, 0, time.UTC)}
}

// A wide fire's running node names its items as a range: ZooKeeper writes the node once per item, and each
// used to carry the list of all 667 (~3 KB).
func TestRunningNodeOfAWideFireIsSmall(t *testing.T) {
	r := wideRunning()
	data := r.encode()
	if len(r.TaskID) < 2500 || len(data) > 250 {
		t.Fatalf("a task id of %d bytes made a node of %d bytes, want at most 250:\n%s", len(r.TaskID), len(data), data)
	}
	if !strings.Contains(string(data), "taskId: fanout-00000@-@0-666@-@READY@-@127.0.0.1@-@4242@-@") {
		t.Fatalf("node:\n%s", data)
	}
	if n := testing.AllocsPerRun(100, func() { data = r.encode() }); n != 1 || cap(data) > 512 {
		t.Fatalf("encode allocated %v times, %d bytes, want once, at most 512 (not sized for the list)", n, cap(data))
	}
	if back := decodeRunning(data); back.TaskID != r.TaskID {
		t.Fatalf("task id read back:\n%s\nwant:\n%s", back.TaskID, r.TaskID)
	}
}

// A fire's running node is one allocation, however long its task id (a wide fire's lists 667 items).
func TestRunningEncodeAllocatesOnce(t *testing.T) {
	r := wideRunning()
	if n := testing.AllocsPerRun(100, func() { _ = r.encode() }); n != 1 {
		t.Fatalf("encode allocated %v times, want 1", n)
	}
	r.JobParameter, r.Async, r.Fire, r.Workflow = `a "b"`, true, "fire-1", json.RawMessage(`{"run":"r1"}`)
	if got, want := string(r.encode()), string(encodeLines(r)); got != want {
		t.Fatalf("encode:\n%s\nwant:\n%s", got, want)
	}
}

func FuzzRunningEncode(f *testing.F) {
	f.Add("127.0.0.1@-@1", "e1", "job@-@0,1@-@READY@-@127.0.0.1@-@1@-@u", "NORMAL_TRIGGER", int64(1764050410), "", false, "", "")
	f.Add("i", "e", "t", "MANUAL", int64(0), `p "q"`, true, "fire", `{"a":1}`)
	f.Fuzz(func(t *testing.T, inst, exec, task, source string, unix int64, param string, async bool, fire, workflow string) {
		r := Running{InstanceID: inst, ExecutionID: exec, TaskID: task, Source: ejserver.Source(source),
			ScheduledAt: time.Unix(unix%(1<<34), 0), JobParameter: param, Async: async, Fire: fire}
		if workflow != "" {
			r.Workflow = json.RawMessage(workflow)
		}
		got := r.encode()
		if want := encodeLines(r); string(got) != string(want) {
			t.Fatalf("encode:\n%q\nwant:\n%q", got, want)
		}
		// ids, task ids and sources as the registry writes them read back (decodeRunning reads ElasticJob's
		// YAML-ish lines, where quotes and spaces mean more): only those are checked for the round trip
		plain := func(s string) bool {
			return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@.,:_-") == ""
		}
		if !plain(inst) || !plain(exec) || !plain(task) || !plain(source) || !utf8.ValidString(param) {
			return
		}
		if f := strings.Split(task, "@-@"); len(f) >= 3 && strings.Contains(f[1], "-") {
			return // a range's '-': the items field of a task id ejserver builds holds numbers only
		}
		back := decodeRunning(got)
		if back.InstanceID != inst || back.ExecutionID != exec || back.TaskID != task || string(back.Source) != source ||
			!back.ScheduledAt.Equal(r.ScheduledAt) || back.JobParameter != param || back.Async != async {
			t.Fatalf("decode(encode(%+v)) = %+v", r, back)
		}
	})
}

// BenchmarkRunningEncode: a running node's data for an item of a one-item fire (most fires) and of a wide
// fire (667 items on the peer: its task id's items written as a range).
func BenchmarkRunningEncode(b *testing.B) {
	narrow := wideRunning()
	narrow.TaskID = ejserver.TaskID("steady-00042", []int{0}, false, narrow.InstanceID)
	for _, c := range []struct {
		name string
		r    Running
	}{{"one item", narrow}, {"667 items", wideRunning()}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n += len(c.r.encode())
			}
			b.ReportMetric(float64(n)/float64(b.N), "bytes/node")
		})
	}
}
