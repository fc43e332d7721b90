package main

import (
	"net"
	"os"
	"strconv"
)

// detectIP returns the first non-loopback IPv4 address of an interface that is up, else 127.0.0.1:
// ElasticJob's instance id is {ip}@-@{pid}.
func detectIP() string {
	ifaces, err := net.Interfaces()
	if err == nil {
		for _, iface := range ifaces {
			if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
				continue
			}
			addrs, err := iface.Addrs()
			if err != nil {
				continue
			}
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok {
					if v4 := ipn.IP.To4(); v4 != nil && !v4.IsLinkLocalUnicast() {
						return v4.String()
					}
				}
			}
		}
	}
	return "127.0.0.1"
}

func defaultInstanceID(ip string) string {
	return ip + "@-@" + strconv.Itoa(os.Getpid())
}
