package main

import (
	"flag"
	"fmt"
)

// The one grammar for names: every command that acts on one lease takes its
// name as the first argument (picket get NAME, picket run NAME -- CMD), with
// the flags before or after it, and -name NAME as a synonym, for the scripts
// written when some commands took only the flag. Both forms naming
// different leases are a usage error.

// nameFlag registers -name on fs, the synonym of the NAME argument.
// It also makes -h say the grammar: "Usage: picket get NAME [flags]".
func nameFlag(fs *flag.FlagSet) *string {
	setUsage(fs, "NAME [flags]")
	return fs.String("name", "", "the lease `name`: a synonym of the NAME argument")
}

// setUsage makes -h start with the command's grammar, args after its name.
func setUsage(fs *flag.FlagSet, args string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: picket %s %s   (flags before or after NAME; -name NAME is a synonym)\n", fs.Name(), args)
		fs.PrintDefaults()
	}
}

// leaseName parses args into fs and returns the lease's name, from the
// first argument or -name, and the arguments after it. Go's flag package
// stops at the first argument that is not a flag: leaseName parses the
// flags, takes the name, and parses what follows it again, so that
// "get NAME -print token" and "get -print token NAME" are one command.
//
// With command (picket run), the arguments after the name are the command
// to run, and with -name given every argument is (picket run -name N -- CMD,
// as before). Without it, an argument after the name is a usage error.
// optional (picket history) lets the name be missing ("" is returned).
func leaseName(fs *flag.FlagSet, args []string, flagName *string, command, optional bool) (string, []string, error) {
	cmd := fs.Name()
	if err := parse(fs, args, true); err != nil {
		return "", nil, err
	}
	rest := fs.Args()
	var name string
	switch {
	case command && *flagName != "":
		return *flagName, rest, nil // picket run -name N [--] CMD ARGS...
	case len(rest) > 0:
		name = rest[0]
		if err := parse(fs, rest[1:], true); err != nil {
			return "", nil, err
		}
		rest = fs.Args()
		// -name from the environment (PICKET_NAME) gives way to the argument;
		// on the command line it must say the same.
		if flagSource(fs, "name") == onCommandLine && *flagName != "" && *flagName != name {
			return "", nil, usagef("%s: NAME %q and -name %q name different leases: give one", cmd, name, *flagName)
		}
	default:
		name = *flagName
	}
	if name == "" && !optional {
		return "", nil, usagef("%s: want the lease's NAME: picket %s NAME", cmd, cmd)
	}
	if !command && len(rest) > 0 {
		return "", nil, usagef("%s: unexpected argument %q after NAME %q", cmd, rest[0], name)
	}
	return name, rest, nil
}
