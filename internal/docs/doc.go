// Package docs checks the repository's documentation against the repository:
// every relative link and anchor of README.md and docs/*.md resolves, the
// paths the contributor pages name exist, and docs/ARCHITECTURE.md names
// every package `go list ./...` lists, and every file of the packages whose
// files it lists. It holds no product code.
package docs
