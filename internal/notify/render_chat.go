package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Slack's limits (Block Kit): a header block's text, a section's text.
const (
	slackHeaderMax  = 150
	slackSectionMax = 3000
)

// renderSlack makes a Slack incoming-webhook message: text (the notification's title, shown in
// notifications and by clients without blocks) and blocks: a header, a section with the details in mrkdwn,
// a context line with the namespace, kind and severity.
func renderSlack(c Channel, n Notification) (Request, error) {
	t := title(n)
	ls := lines(n)
	body := slackEscape(strings.Join(ls[:len(ls)-1-boolInt(n.ConsoleURL != "")], "\n"))
	if n.ConsoleURL != "" {
		body += "\n<" + slackEscape(n.ConsoleURL) + "|Open in the ejserver console>"
	}
	type text struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type block struct {
		Type     string `json:"type"`
		Text     *text  `json:"text,omitempty"`
		Elements []text `json:"elements,omitempty"`
	}
	meta := "*" + slackEscape(n.Namespace) + "* · " + string(n.Kind) + " · " + string(severityOf(n)) + " · " +
		n.At.UTC().Format(time.RFC3339)
	blocks := []block{{Type: "header", Text: &text{Type: "plain_text", Text: truncate(t, slackHeaderMax)}}}
	if strings.TrimSpace(body) != "" {
		blocks = append(blocks, block{Type: "section", Text: &text{Type: "mrkdwn", Text: truncate(body, slackSectionMax)}})
	}
	blocks = append(blocks, block{Type: "context", Elements: []text{{Type: "mrkdwn", Text: meta}}})
	b, err := json.Marshal(struct {
		Text   string  `json:"text"`
		Blocks []block `json:"blocks"`
	}{Text: slackEscape(t), Blocks: blocks})
	if err != nil {
		return Request{}, err
	}
	return jsonRequest(str(c.Slack.URL), b), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// slackEscape escapes the three characters Slack's mrkdwn reserves.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// markdown is the notification as the Markdown subset DingTalk and WeCom robots render: a bold title, then
// the lines.
func markdown(n Notification, heading string) string {
	var b strings.Builder
	b.WriteString(heading + " " + title(n) + "\n\n")
	for _, l := range lines(n) {
		b.WriteString(l + "\n\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// DingTalk's limit on a markdown message, in bytes (its docs say 20000 for text; keep well under).
const dingTalkMax = 18000

// renderDingTalk makes a DingTalk custom-robot message: msgtype markdown with title and text, and at
// (atMobiles, isAtAll; the mobiles are written into the text too, as DingTalk requires for a mention).
// With a signing secret the URL gets timestamp (ms) and sign = base64(HMAC-SHA256(secret,
// timestamp + "\n" + secret)), URL-encoded.
func renderDingTalk(c Channel, n Notification, now time.Time) (Request, error) {
	s := c.DingTalk
	text := markdown(n, "####")
	for _, m := range s.AtMobiles {
		text += " @" + m
	}
	type at struct {
		AtMobiles []string `json:"atMobiles,omitempty"`
		IsAtAll   bool     `json:"isAtAll"`
	}
	type md struct {
		Title string `json:"title"`
		Text  string `json:"text"`
	}
	b, err := json.Marshal(struct {
		MsgType  string `json:"msgtype"`
		Markdown md     `json:"markdown"`
		At       at     `json:"at"`
	}{MsgType: "markdown", Markdown: md{Title: truncate(title(n), 100), Text: truncate(text, dingTalkMax)},
		At: at{AtMobiles: s.AtMobiles, IsAtAll: s.AtAll}})
	if err != nil {
		return Request{}, err
	}
	u := str(s.URL)
	if secret := str(s.Secret); secret != "" {
		u = DingTalkSign(u, secret, now)
	}
	return jsonRequest(u, b), nil
}

// DingTalkSign adds DingTalk's timestamp and sign query parameters to a robot URL.
func DingTalkSign(robotURL, secret string, now time.Time) string {
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "\n" + secret))
	sign := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	sep := "?"
	if strings.Contains(robotURL, "?") {
		sep = "&"
	}
	return robotURL + sep + "timestamp=" + ts + "&sign=" + url.QueryEscape(sign)
}

// WeCom's limits: a markdown message's content, a text message's content, in bytes.
const (
	weComMarkdownMax = 4096
	weComTextMax     = 2048
)

// renderWeCom makes a WeCom group-robot message: msgtype markdown with content; with mentionedMobiles,
// msgtype text with content and mentioned_mobile_list (WeCom's markdown messages cannot mention).
func renderWeCom(c Channel, n Notification) (Request, error) {
	s := c.WeCom
	var v any
	if len(s.MentionedMobiles) == 0 {
		type md struct {
			Content string `json:"content"`
		}
		v = struct {
			MsgType  string `json:"msgtype"`
			Markdown md     `json:"markdown"`
		}{"markdown", md{truncate(markdown(n, "###"), weComMarkdownMax)}}
	} else {
		type text struct {
			Content             string   `json:"content"`
			MentionedMobileList []string `json:"mentioned_mobile_list"`
		}
		v = struct {
			MsgType string `json:"msgtype"`
			Text    text   `json:"text"`
		}{"text", text{truncate(title(n)+"\n"+strings.Join(lines(n), "\n"), weComTextMax), s.MentionedMobiles}}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Request{}, err
	}
	return jsonRequest(str(s.URL), b), nil
}
