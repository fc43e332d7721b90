package webhook

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// excerpt returns at most n bytes of body as valid UTF-8: a rune cut at the end is dropped, invalid
// sequences become U+FFFD.
func excerpt(body []byte, n int) string {
	if len(body) > n {
		body = body[:n]
		// Drop a rune the cut split (at most utf8.UTFMax-1 bytes at the end).
		for i := 1; i < utf8.UTFMax && i <= len(body); i++ {
			if utf8.RuneStart(body[len(body)-i]) {
				if !utf8.FullRune(body[len(body)-i:]) {
					body = body[:len(body)-i]
				}
				break
			}
		}
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// hasMore reports whether a DATAFLOW receiver's 2xx body is a JSON object with "hasMore": true.
func hasMore(body []byte) bool {
	if !bytes.Contains(body, []byte("hasMore")) {
		return false
	}
	var v struct {
		HasMore bool `json:"hasMore"`
	}
	return json.Unmarshal(body, &v) == nil && v.HasMore
}
