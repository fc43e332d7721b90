// Command ejserver is the ejserver daemon and its command-line client.
//
//	ejserver serve [flags]      run a peer (see ejserver serve --help)
//	ejserver version            print the version
package main

import (
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		usage()
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:])
	case "version", "--version":
		fmt.Println("ejserver", version)
		return 0
	case "help", "-h", "--help":
		usage()
		return 0
	}
	fmt.Fprintf(os.Stderr, "ejserver: unknown command %q\n\n", args[0])
	usage()
	return 2
}

func usage() {
	fmt.Fprint(os.Stderr, `ejserver: distributed, HTTP-first scheduled jobs on ZooKeeper.

Usage:
  ejserver serve [flags]   run a peer; every flag also reads an EJ_* environment variable
  ejserver version         print the version

Run "ejserver serve --help" for the peer's flags.
`)
}
