package notify

import (
	"bytes"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"strings"
	"time"
)

// Message is an email to submit: the envelope and the RFC 5322 message.
type Message struct {
	From string
	To   []string
	Data []byte
}

// RenderEmail makes an RFC 5322 message of n: From, To, Subject (the channel's prefix and the title,
// RFC 2047-encoded), Date (n.At), Message-ID (from n.ID, so a retried send is recognisably the same
// message), a plain-text UTF-8 body in quoted-printable, and X-Ejserver-* headers for mail filters.
func RenderEmail(c Channel, n Notification) (Message, error) {
	s := c.Email
	if s == nil {
		return Message{}, fmt.Errorf("channel %s has no email settings", c.Name)
	}
	prefix := s.SubjectPrefix
	if prefix == "" {
		prefix = "[ejserver]"
	}
	at := n.At
	if at.IsZero() {
		at = time.Unix(0, 0)
	}
	var b bytes.Buffer
	h := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	h("From", s.From)
	h("To", strings.Join(s.To, ", "))
	h("Subject", mime.QEncoding.Encode("utf-8", truncate(prefix+" "+title(n), 900)))
	h("Date", at.UTC().Format(time.RFC1123Z))
	h("Message-ID", "<"+messageIDLeft(n.ID)+"@"+messageIDRight(n.Namespace)+">")
	h("MIME-Version", "1.0")
	h("Content-Type", "text/plain; charset=utf-8")
	h("Content-Transfer-Encoding", "quoted-printable")
	h("X-Ejserver-Kind", string(n.Kind))
	if n.Job != "" {
		h("X-Ejserver-Job", n.Job)
	}
	if n.Workflow != nil {
		h("X-Ejserver-Workflow", n.Workflow.Name)
	}
	h("X-Ejserver-Severity", string(severityOf(n)))
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	body := title(n) + "\n\n" + strings.Join(lines(n), "\n") + "\n"
	if _, err := qp.Write([]byte(strings.ReplaceAll(body, "\n", "\r\n"))); err != nil {
		return Message{}, err
	}
	if err := qp.Close(); err != nil {
		return Message{}, err
	}
	return Message{From: addrOf(s.From), To: addrsOf(s.To), Data: b.Bytes()}, nil
}

// messageIDLeft keeps the characters of id that a Message-ID's dot-atom allows.
func messageIDLeft(id string) string {
	var b strings.Builder
	for _, r := range id {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.+=", r)) {
			b.WriteRune(r)
		}
	}
	out := strings.Trim(b.String(), ".")
	if out == "" {
		out = "notification"
	}
	return strings.ReplaceAll(out, "..", ".")
}

func messageIDRight(ns string) string {
	return messageIDLeft(ns) + ".ejserver"
}
