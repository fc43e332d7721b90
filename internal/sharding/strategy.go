package sharding

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/ejserver/ejserver"
)

// Instance is one candidate owner of items: a peer's instance id and the IP of its server.
type Instance struct {
	ID       string
	ServerIP string
}

// Assignment maps an instance id to the items it owns, each list ascending.
type Assignment map[string][]int

// Strategy assigns items 0..total-1 to instances. Instances come in the stable order Sort gives.
type Strategy func(instances []Instance, jobName string, total int) Assignment

// StrategyFor returns the named ElasticJob strategy.
func StrategyFor(name string) (Strategy, error) {
	switch name {
	case "", ejserver.StrategyAverage:
		return Average, nil
	case ejserver.StrategyOdevity:
		return Odevity, nil
	case ejserver.StrategyRoundRobin:
		return RoundRobin, nil
	}
	return nil, fmt.Errorf("unknown sharding strategy %q", name)
}

// Average is ElasticJob's AVG_ALLOCATION: instance k gets [k*per, (k+1)*per) where per = total/n, and the
// total%n remaining items go one each to the first instances in list order.
func Average(instances []Instance, _ string, total int) Assignment {
	out := make(Assignment, len(instances))
	n := len(instances)
	if n == 0 {
		return out
	}
	per := total / n
	for k, in := range instances {
		items := make([]int, 0, per+1)
		for i := k * per; i < (k+1)*per; i++ {
			items = append(items, i)
		}
		if rest := per*n + k; rest < total {
			items = append(items, rest)
		}
		out[in.ID] = items
	}
	return out
}

// Odevity is ElasticJob's ODEVITY: reverse the list when the job name's Java hashCode is even, then Average.
func Odevity(instances []Instance, jobName string, total int) Assignment {
	list := slices.Clone(instances)
	if JavaHashCode(jobName)%2 == 0 {
		slices.Reverse(list)
	}
	return Average(list, jobName, total)
}

// RoundRobin is ElasticJob's ROUND_ROBIN: rotate the list left by |hashCode(jobName)| % n, then Average.
func RoundRobin(instances []Instance, jobName string, total int) Assignment {
	n := len(instances)
	if n == 0 {
		return Assignment{}
	}
	h := int64(JavaHashCode(jobName))
	if h < 0 {
		h = -h // Java's Math.abs(Integer.MIN_VALUE) stays negative (and ElasticJob would fail); take the true value
	}
	offset := int(h % int64(n))
	list := append(slices.Clone(instances[offset:]), instances[:offset]...)
	return Average(list, jobName, total)
}

// JavaHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, in int32.
func JavaHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 { // a surrogate pair in UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// Sort orders instances by server IP (numerically, IPv4 before IPv6, unparsable IPs last by text) and then by
// instance id, so every peer computes the same assignment from the same set.
func Sort(instances []Instance) {
	slices.SortFunc(instances, func(a, b Instance) int {
		if c := compareIP(a.ServerIP, b.ServerIP); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

func compareIP(a, b string) int {
	pa, errA := netip.ParseAddr(a)
	pb, errB := netip.ParseAddr(b)
	switch {
	case errA == nil && errB == nil:
		return pa.Unmap().Compare(pb.Unmap())
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}
