package webhook

import (
	"context"
	"log/slog"
)

// itemLog writes a delivery's lines with its job, item and execution id. It holds the payload rather than a
// logger made with With: a Sender prepares a delivery per item, and With copies the logger and, with the
// JSON and text handlers, formats the three attributes at once, for every item, though almost none of them
// ever writes a line (the attempts' lines are at debug level).
type itemLog struct {
	log *slog.Logger
	p   *Payload
}

func (l itemLog) debug(msg string, args ...any) { l.write(slog.LevelDebug, msg, args) }
func (l itemLog) warn(msg string, args ...any)  { l.write(slog.LevelWarn, msg, args) }

func (l itemLog) write(level slog.Level, msg string, args []any) {
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	attrs := append([]any{"job", l.p.JobName, "item", l.p.ShardingItem, "execution_id", l.p.ExecutionID}, args...)
	l.log.Log(ctx, level, msg, attrs...)
}
