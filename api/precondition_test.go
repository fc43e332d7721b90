package api

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// versions the table's preconditions are tried against
var probeVersions = []int32{0, 1, 3, 4, 5, 30}

func TestParseIfMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		fields  []string // If-Match fields; nil: no header
		matches []int32  // of probeVersions
		noMatch string   // start of whyNoMatch
		invalid string   // start of the 400's detail; "" for a valid header
	}{
		{name: "absent", fields: nil},
		{name: "star", fields: []string{"*"}, matches: probeVersions},
		{name: "star with spaces", fields: []string{" * "}, matches: probeVersions},
		{name: "one tag", fields: []string{`"3"`}, matches: []int32{3}},
		{name: "a list", fields: []string{`"1", "3","30"`}, matches: []int32{1, 3, 30}},
		{name: "two fields are one list", fields: []string{`"1"`, `"4"`}, matches: []int32{1, 4}},
		{name: "empty elements", fields: []string{` , "3",, `}, matches: []int32{3}},
		// opaque tags: well-formed, not one ejserver sent, so no version matches (412, not 400)
		{name: "not a number", fields: []string{`"stale"`}},
		{name: "not canonical", fields: []string{`"03"`}},
		{name: "empty tag", fields: []string{`""`}},
		{name: "comma inside a tag", fields: []string{`"3,4"`}},
		{name: "obs-text", fields: []string{"\"\xe9t\xe9\""}},
		// strong comparison: a weak tag never matches, even the current version's
		{name: "weak", fields: []string{`W/"3"`}, noMatch: "If-Match has only weak"},
		{name: "weak and strong", fields: []string{`W/"3", "5"`}, matches: []int32{5}},
		{name: "empty field", fields: []string{""}, noMatch: "If-Match is empty"},
		// not entity-tag syntax: 400
		{name: "unquoted", fields: []string{`3`}, invalid: `If-Match: "3" is not a quoted entity-tag`},
		{name: "a word", fields: []string{`soon`}, invalid: `If-Match: "soon" is not`},
		{name: "weak unquoted", fields: []string{`W/3`}, invalid: `If-Match: "W/3" is not`},
		{name: "lower-case weak", fields: []string{`w/"3"`}, invalid: `If-Match: "w/\"3\"" is not`},
		{name: "unterminated", fields: []string{`"3`}, invalid: "If-Match: an entity-tag misses its closing quote"},
		{name: "space inside", fields: []string{`"a b"`}, invalid: `If-Match: entity-tag "a b" holds ' '`},
		{name: "DEL inside", fields: []string{"\"a\x7f\""}, invalid: "If-Match: entity-tag"},
		{name: "no comma", fields: []string{`"3" "4"`}, invalid: `If-Match: entity-tags must be separated by commas, not "\"4\""`},
		{name: "junk after a tag", fields: []string{`"3"x`}, invalid: "If-Match: entity-tags must be separated"},
		{name: "star in a list", fields: []string{`*, "3"`}, invalid: `If-Match: "*" is not`},
		{name: "star in a second field", fields: []string{`"3"`, `*`}, invalid: `If-Match: "*" is not`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for _, f := range tt.fields {
				h.Add("If-Match", f)
			}
			p, err := parseIfMatch(h)
			if tt.invalid != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.invalid) {
					t.Fatalf("error %v, want one starting %q", err, tt.invalid)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.fields == nil {
				if p != nil {
					t.Fatalf("no header gave %+v", p)
				}
				return
			}
			var matched []int32
			for _, v := range probeVersions {
				if p.matches(v) {
					matched = append(matched, v)
				}
			}
			if !slices.Equal(matched, tt.matches) {
				t.Fatalf("matches %v, want %v", matched, tt.matches)
			}
			if why := p.whyNoMatch(); tt.noMatch == "" && why != "" || !strings.HasPrefix(why, tt.noMatch) {
				t.Fatalf("whyNoMatch %q, want %q", why, tt.noMatch)
			}
		})
	}
}

// Whatever the header, parsing doesn't panic, a version matches only if the header names its ETag (or is
// "*"), and a valid list stays valid with one more tag, which then matches.
func FuzzParseIfMatch(f *testing.F) {
	for _, s := range []string{`"3"`, `*`, `W/"3", "4"`, `"a,b" , ""`, `soon`, `"3`, ` , `, "\"\xe9\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		p, err := parseIfMatch(http.Header{"If-Match": {value}})
		if err != nil || p.anyVersion {
			return
		}
		for _, v := range probeVersions {
			if p.matches(v) && !strings.Contains(value, etag(v)) {
				t.Fatalf("%q matches version %d", value, v)
			}
		}
		more, err := parseIfMatch(http.Header{"If-Match": {value + `, "7"`}})
		if err != nil || !more.matches(7) {
			t.Fatalf("%q plus a tag: %v", value, err)
		}
	})
}
