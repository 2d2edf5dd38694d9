package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
)

// helpWidth is the column at which flag help wraps.
const helpWidth = 100

// sectionTitles name the sections of settings whose name is not their
// title with a capital.
var sectionTitles = map[string]string{
	"":       "Server",
	"http":   "HTTP",
	"gvisor": "gVisor",
}

// useSectionedHelp makes the usage of root and its subcommands list a
// command's own flags first, then its settings' flags in one section per
// part of the configuration (limits, pool, sessions, http, ...).
func useSectionedHelp(root *cobra.Command) {
	cobra.AddTemplateFunc("flagSections", flagSections)
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(),
		"Flags:\n{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}",
		"{{flagSections .LocalFlags | trimTrailingWhitespaces}}", 1))
}

// flagSections is the usage of flags: "Flags:" with those that are no
// setting, then "<Section> settings:" with each section's.
func flagSections(flags *pflag.FlagSet) string {
	own := pflag.NewFlagSet("own", pflag.ContinueOnError)
	sections := map[string]*pflag.FlagSet{}
	flags.VisitAll(func(f *pflag.Flag) {
		setting := f.Annotations[config.SettingAnnotation]
		if len(setting) == 0 {
			own.AddFlag(f)
			return
		}
		section := ""
		if head, _, ok := strings.Cut(setting[0], "."); ok {
			section = head
		}
		if sections[section] == nil {
			sections[section] = pflag.NewFlagSet(section, pflag.ContinueOnError)
		}
		sections[section].AddFlag(f)
	})
	var b strings.Builder
	if own.HasFlags() {
		b.WriteString("Flags:\n" + own.FlagUsagesWrapped(helpWidth))
	}
	names := make([]string, 0, len(sections))
	for name := range sections {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		title, ok := sectionTitles[name]
		if !ok {
			title = strings.ToUpper(name[:1]) + name[1:]
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(title + " settings:\n" + sections[name].FlagUsagesWrapped(helpWidth))
	}
	return b.String()
}
