package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

func init() { subcommands = append(subcommands, newLanguagesCmd) }

func newLanguagesCmd(g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "languages",
		Short: "List the languages, their images and runtime versions",
		Long: `Languages prints every language in the registry: aliases, the image it
runs in, whether it has a compile stage, and the runtime version recorded
on its image when the image was built (empty while the image is missing);
--json adds the packages preinstalled for each language.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, reg, err := g.load()
			if err != nil {
				return err
			}
			versions := map[string]string{}
			packages := map[string]map[string]string{}
			images := map[string]bool{}
			if st, err := newStack(g); err == nil {
				defer st.Close()
				for _, l := range reg.Languages() {
					rt := st.engine.Runtime(cmd.Context(), l)
					versions[l.Name], packages[l.Name] = rt.Version, rt.Packages
					tag := reg.ImageOf(l).Tag
					if _, ok := images[tag]; !ok {
						images[tag] = st.backend.CheckImage(cmd.Context(), tag) == nil
					}
				}
			}
			if asJSON {
				type entry struct {
					languages.Language
					ImageTag       string            `json:"image_tag"`
					ImagePresent   bool              `json:"image_present"`
					RuntimeVersion string            `json:"runtime_version"`
					Packages       map[string]string `json:"preinstalled_packages,omitempty"`
				}
				var out []entry
				for _, l := range reg.Languages() {
					tag := reg.ImageOf(l).Tag
					out = append(out, entry{l, tag, images[tag], versions[l.Name], packages[l.Name]})
				}
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LANGUAGE\tALIASES\tCOMPILED\tIMAGE\tVERSION")
			for _, l := range reg.Languages() {
				tag := reg.ImageOf(l).Tag
				v := versions[l.Name]
				if !images[tag] {
					v = "(image missing: mcp-code-runner images build " + l.Name + ")"
				}
				compiled := "no"
				if l.Compiled() {
					compiled = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Name, strings.Join(l.Aliases, ","), compiled, tag, v)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	g.addSettingFlags(cmd, registryFlags...)
	return cmd
}
