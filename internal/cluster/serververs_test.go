package cluster

import (
	"maps"
	"testing"
)

func TestNextServerVersions(t *testing.T) {
	v := func(c int64, ver int32) nodeVersion { return nodeVersion{czxid: c, version: ver} }
	prev := nextServerVersions(map[string]string{"10.0.0.1": "", "10.0.0.2": "", "10.0.0.3": ""},
		map[string]nodeVersion{"10.0.0.1": v(1, 0), "10.0.0.2": v(2, 0), "10.0.0.3": v(3, 1)}, nil)
	tests := []struct {
		name string
		cur  map[string]string
		read map[string]nodeVersion
		want map[string]nodeVersion
	}{
		{"none", nil, nil, map[string]nodeVersion{}},
		{"unchanged: the known versions", map[string]string{"10.0.0.1": "", "10.0.0.2": "", "10.0.0.3": ""}, nil,
			map[string]nodeVersion{"10.0.0.1": v(1, 0), "10.0.0.2": v(2, 0), "10.0.0.3": v(3, 1)}},
		{"one read again wins over the known", map[string]string{"10.0.0.1": "", "10.0.0.2": "DISABLED", "10.0.0.3": ""},
			map[string]nodeVersion{"10.0.0.2": v(2, 1)},
			map[string]nodeVersion{"10.0.0.1": v(1, 0), "10.0.0.2": v(2, 1), "10.0.0.3": v(3, 1)}},
		{"a server gone is dropped, a new one read is kept", map[string]string{"10.0.0.1": "", "10.0.0.9": ""},
			map[string]nodeVersion{"10.0.0.9": v(9, 0)},
			map[string]nodeVersion{"10.0.0.1": v(1, 0), "10.0.0.9": v(9, 0)}},
		{"a server neither read nor known has none", map[string]string{"10.0.0.8": ""}, nil, map[string]nodeVersion{}},
		{"a read of a server not in cur is ignored", map[string]string{"10.0.0.1": ""},
			map[string]nodeVersion{"10.0.0.7": v(7, 0)}, map[string]nodeVersion{"10.0.0.1": v(1, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nextServerVersions(tt.cur, tt.read, prev)
			if !maps.Equal(versionsMap(got), tt.want) {
				t.Fatalf("got %v, want %v", versionsMap(got), tt.want)
			}
			for ip, want := range tt.want {
				if v, ok := got.get(ip); !ok || v != want {
					t.Fatalf("get(%s) = %v, %v; want %v", ip, v, ok, want)
				}
			}
			if _, ok := got.get("10.9.9.9"); ok {
				t.Fatal("get of an unknown IP found a version")
			}
		})
	}
}

// FuzzServerVersions: the slice answers as the map it replaced did (the versions read, else the known ones,
// of the servers in cur only).
func FuzzServerVersions(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, []byte{1, 2}, []byte{3})
	f.Fuzz(func(t *testing.T, cur, read, prev []byte) {
		ip := func(b byte) string { return "10.0.0." + string(rune('a'+b%16)) }
		curM, readM, prevM := map[string]string{}, map[string]nodeVersion{}, map[string]nodeVersion{}
		for _, b := range cur {
			curM[ip(b)] = ""
		}
		for i, b := range read {
			readM[ip(b)] = nodeVersion{czxid: int64(b), version: int32(i)}
		}
		for i, b := range prev {
			prevM[ip(b)] = nodeVersion{czxid: int64(b) + 100, version: int32(i)}
		}
		prevS := nextServerVersions(mapsKeysOf(prevM), prevM, nil)
		got := nextServerVersions(curM, readM, prevS)
		want := map[string]nodeVersion{}
		for k := range curM {
			if v, ok := readM[k]; ok {
				want[k] = v
			} else if v, ok := prevM[k]; ok {
				want[k] = v
			}
		}
		if !maps.Equal(versionsMap(got), want) || len(got) != len(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for k, v := range want {
			if g, ok := got.get(k); !ok || g != v {
				t.Fatalf("get(%s) = %v, %v; want %v", k, g, ok, v)
			}
		}
	})
}

func versionsMap(s serverVersions) map[string]nodeVersion {
	m := map[string]nodeVersion{}
	for _, x := range s {
		m[x.ip] = x.v
	}
	return m
}

func mapsKeysOf(m map[string]nodeVersion) map[string]string {
	out := map[string]string{}
	for k := range m {
		out[k] = ""
	}
	return out
}
