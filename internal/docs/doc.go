// Package docs checks the repository's documentation against the repository:
// every relative link and anchor of README.md and docs/*.md resolves, and the
// paths the contributor pages name exist. It holds no product code.
package docs
