// Package audit is ejserver's audit trail: who changed what, when, from where, and with what outcome.
//
// The core is pure: Entry (one recorded action), Diff (the field-level difference of two configs, secrets
// shown only as "changed"), JobFields and ChannelFields (a config as the fields Diff compares) and Folder
// (401/403 answers folded per source per minute, so a flood cannot fill the store). Recorder is the thin
// edge the API, the jobs-file apply and the ZooKeeper watcher write through; the entries go to the history
// store (table AUDIT_LOG), pruned with the history.
package audit
