package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// envFlags is a flag set whose flags each also read an environment variable; a flag given on the command
// line wins over the variable, which wins over the default.
type envFlags struct {
	fs   *flag.FlagSet
	envs map[string]string // flag name -> env var
}

func newEnvFlags(name, summary string) *envFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	f := &envFlags{fs: fs, envs: map[string]string{}}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nFlags (each also settable through the environment variable shown; the flag wins):\n", summary)
		fs.VisitAll(func(fl *flag.Flag) {
			def := ""
			if fl.DefValue != "" && fl.DefValue != "false" && fl.DefValue != "0s" {
				def = fmt.Sprintf(" (default %s)", fl.DefValue)
			}
			env := ""
			if e := f.envs[fl.Name]; e != "" {
				env = " [" + e + "]"
			}
			fmt.Fprintf(fs.Output(), "  --%s%s%s\n      %s\n", fl.Name, env, def, fl.Usage)
		})
	}
	return f
}

func envName(flagName string) string {
	return "EJ_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func (f *envFlags) String(name, def, usage string) *string {
	f.envs[name] = envName(name)
	return f.fs.String(name, def, usage)
}

func (f *envFlags) Int(name string, def int, usage string) *int {
	f.envs[name] = envName(name)
	return f.fs.Int(name, def, usage)
}

func (f *envFlags) Bool(name string, def bool, usage string) *bool {
	f.envs[name] = envName(name)
	return f.fs.Bool(name, def, usage)
}

func (f *envFlags) Duration(name string, def time.Duration, usage string) *time.Duration {
	f.envs[name] = envName(name)
	return f.fs.Duration(name, def, usage)
}

// EnvAlias makes a flag read an extra variable name too (e.g. EJ_API_TOKEN).
func (f *envFlags) EnvAlias(name, env string) { f.envs[name] = env }

// Parse parses args, then fills every flag not given on the command line from its environment variable.
func (f *envFlags) Parse(args []string) error {
	if err := f.fs.Parse(args); err != nil {
		return err
	}
	if f.fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", f.fs.Arg(0))
	}
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var err error
	f.fs.VisitAll(func(fl *flag.Flag) {
		env := f.envs[fl.Name]
		v, ok := os.LookupEnv(env)
		if given[fl.Name] || !ok || err != nil {
			return
		}
		if e := fl.Value.Set(v); e != nil {
			err = fmt.Errorf("environment variable %s=%q for --%s: %v", env, v, fl.Name, e)
		}
	})
	return err
}
