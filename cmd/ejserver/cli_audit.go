package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ejserver/ejserver/client"
)

// auditCmd is `ejserver audit`: the audit trail, newest first.
func auditCmd(args []string, stdout, stderr io.Writer) int {
	k := newCLI("audit", "audit [--since DURATION | --from TIME] [--to TIME] [--actor NAME] [--action A] [--job NAME] [--limit N] [flags]", stdout, stderr)
	since := k.fs.Duration("since", 0, "only entries of the last DURATION (e.g. 24h)")
	from := k.fs.String("from", "", "only entries recorded at or after this RFC 3339 time")
	to := k.fs.String("to", "", "only entries recorded before this RFC 3339 time")
	actor := k.fs.String("actor", "", "only this actor's entries: a token or certificate name, zookeeper or jobs-file")
	action := k.fs.String("action", "", "only this action, e.g. job.replace, job.disable, auth.denied, zookeeper.job.config")
	job := k.fs.String("job", "", "only this job's entries")
	limit := k.fs.Int("limit", 20, "how many, 1-500")
	cursor := k.fs.String("cursor", "", "nextCursor of a previous page (-o json shows it)")
	return k.run(args, 0, func(ctx context.Context, _ []string) error {
		if *limit < 1 || *limit > 500 {
			return usageErrorf("--limit: must be between 1 and 500, got %d", *limit)
		}
		f := client.AuditFilter{Actor: *actor, Action: *action, Job: *job, Limit: *limit, Cursor: *cursor}
		var err error
		if *since != 0 && *from != "" {
			return usageErrorf("--since and --from: give one of them")
		}
		if *since < 0 {
			return usageErrorf("--since: must be positive, got %s", *since)
		}
		if *since > 0 {
			f.From = time.Now().Add(-*since)
		}
		for _, t := range []struct {
			flag, v string
			into    *time.Time
		}{{"--from", *from, &f.From}, {"--to", *to, &f.To}} {
			if t.v == "" {
				continue
			}
			if *t.into, err = time.Parse(time.RFC3339Nano, t.v); err != nil {
				return usageErrorf("%s: %q is not an RFC 3339 time (2026-11-21T10:00:00Z)", t.flag, t.v)
			}
		}
		page, err := k.c.Audit(ctx, f)
		if err != nil {
			return err
		}
		if *k.output == "json" {
			return k.json(page)
		}
		rows := make([][]string, 0, len(page.Items))
		for _, e := range page.Items {
			rows = append(rows, []string{e.Time.Local().Format("2006-01-02 15:04:05"), orDash(e.Actor), e.Action,
				orDash(auditObject(e)), auditOutcome(e), orDash(auditWhat(e))})
		}
		k.table("TIME\tACTOR\tACTION\tOBJECT\tOUTCOME\tWHAT", rows)
		return nil
	})
}

func auditObject(e client.AuditEntry) string {
	var parts []string
	if e.Job != "" {
		parts = append(parts, e.Job)
	}
	if e.Item != nil {
		parts = append(parts, fmt.Sprintf("item %d", *e.Item))
	}
	if e.Server != "" {
		parts = append(parts, "server "+e.Server)
	}
	if e.Channel != "" {
		parts = append(parts, "channel "+e.Channel)
	}
	return strings.Join(parts, " ")
}

func auditOutcome(e client.AuditEntry) string {
	s := e.Outcome
	if e.Status != 0 {
		s += fmt.Sprintf(" (%d)", e.Status)
	}
	if e.Count > 1 {
		s += fmt.Sprintf(" ×%d", e.Count)
	}
	return s
}

// auditWhat is the changes in one line (secrets only as "changed"), else the detail.
func auditWhat(e client.AuditEntry) string {
	var parts []string
	for _, c := range e.Changes {
		switch {
		case c.Before == "" && c.After == "":
			parts = append(parts, c.Field+" "+c.Note)
		default:
			parts = append(parts, fmt.Sprintf("%s: %q → %q", c.Field, c.Before, c.After))
		}
	}
	if len(parts) > 6 {
		parts = append(parts[:6], fmt.Sprintf("and %d more", len(parts)-6))
	}
	what := strings.Join(parts, ", ")
	if e.Detail != "" {
		if what != "" {
			what = e.Detail + ": " + what
		} else {
			what = e.Detail
		}
	}
	return what
}
