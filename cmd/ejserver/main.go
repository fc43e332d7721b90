// Command ejserver is the ejserver daemon and its command-line client.
//
//	ejserver serve [flags]      run a peer (see ejserver serve --help)
//	ejserver job ...            list, get, apply, delete, trigger, disable/enable jobs; sharding, history
//	ejserver server ...         list, disable/enable servers; ejserver instance list
//	ejserver execution ...      get, list executions; heartbeat, complete for receivers of long-running items
//	ejserver channel ...        list, get, apply, delete, test notification channels; their history
//	ejserver audit              the audit trail: who changed what, when, from where
//	ejserver cron next EXPR     the next fire times of an expression
//	ejserver stats ...          a job's or the cluster's stats; the schedule's load ahead
//	ejserver token new|hash     make API tokens
//	ejserver healthcheck        exit 0 if the local peer's /healthz answers (for container health checks)
//	ejserver version            print the version, commit, build date and Go version
package main

import (
	"fmt"
	"os"
)

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
	case "job", "jobs":
		return jobCmd(args[1:], os.Stdout, os.Stderr)
	case "server", "servers":
		return serverCmd(args[1:], os.Stdout, os.Stderr)
	case "instance", "instances":
		return instanceCmd(args[1:], os.Stdout, os.Stderr)
	case "execution", "executions":
		return executionCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
	case "channel", "channels":
		return channelCmd(args[1:], os.Stdout, os.Stderr)
	case "workflow", "workflows":
		return workflowCmd(args[1:], os.Stdout, os.Stderr)
	case "calendar", "calendars":
		return calendarCmd(args[1:], os.Stdout, os.Stderr)
	case "audit":
		return auditCmd(args[1:], os.Stdout, os.Stderr)
	case "backfill", "backfills":
		return backfillCmd(args[1:], os.Stdout, os.Stderr)
	case "alerts", "alert":
		return alertsCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
	case "stats":
		return statsCmd(args[1:], os.Stdout, os.Stderr)
	case "cron":
		return cronCmd(args[1:], os.Stdout, os.Stderr)
	case "token":
		return tokenCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
	case "healthcheck":
		return healthcheckCmd(args[1:], os.Stdout, os.Stderr)
	case "version", "--version":
		return versionCmd(args[1:], os.Stdout, os.Stderr)
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
  ejserver serve [flags]              run a peer; every flag also reads an EJ_* environment variable
  ejserver job list|get|apply|delete|trigger|disable|enable|sharding|history|dump ...
  ejserver server list|disable|enable ...
  ejserver instance list
  ejserver execution get ID | list [--job NAME] [--item N] [--failed|--succeeded] [--running] [--limit N]
  ejserver execution heartbeat --callback-url URL --token TOKEN [--progress N] [--message M]
  ejserver execution complete --callback-url URL --token TOKEN --status success|failure [--message M]
                              [--output O|--output-file F] [--has-more]
  ejserver channel list|get|apply|delete|test|history ...
                                      notification channels (Slack, email, PagerDuty, ...)
  ejserver workflow list|get|apply|delete|run|runs|show|cancel|retry ...
                                      workflows: jobs run after other jobs, as DAGs
  ejserver calendar list|get|apply|delete ...
                                      named calendars jobs exclude or are restricted to
  ejserver audit [--since D|--from T] [--to T] [--actor NAME] [--action A] [--job NAME] [--limit N]
                                      the audit trail: who changed what, when, from where
  ejserver backfill start|list|get|cancel JOB ...  run a job's past fires again (ejserver backfill help)
  ejserver backfill replay EXECUTION  re-run one failed execution
  ejserver alerts defaults | set-defaults -f FILE
                                      the cluster's default alert rules
  ejserver cron next 'EXPR' [--tz ZONE] [--count N] [--exclude-calendars A,B] [--include-calendars C]
  ejserver stats job NAME|cluster|load [--window 24h] [--bucket 5m] [--horizon 1h]
                                      a job's or every job's stats per bucket; the load ahead
  ejserver token new|hash [--role admin|viewer] [--name NAME]
  ejserver healthcheck [--ready] [--url URL]
                                      exit 0 if the peer's /healthz (/readyz) answers 200, else 1
  ejserver version [--json]           print the version, commit, build date and Go version

Run "ejserver serve --help" for the peer's flags, "ejserver job" for the job commands, "ejserver execution"
for the execution commands. The client commands reach the server at --server [EJ_SERVER]
(http://127.0.0.1:8080) with --token [EJ_TOKEN, else EJ_API_TOKEN]; execution heartbeat and complete reach
the item's callback URL [EJ_CALLBACK_URL] with its callback token [EJ_CALLBACK_TOKEN] instead.
`)
}
