#!/usr/bin/env bash
# make lint: gofmt, go vet, go.mod tidy, and golangci-lint (.golangci.yml).
# golangci-lint is installed from the Go module proxy at the pinned version
# when missing (about 2 minutes the first time).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GOLANGCI_LINT_VERSION=v2.15.0
bin="$(go env GOPATH)/bin/golangci-lint"
if ! "$bin" version 2>/dev/null | grep -q "version ${GOLANGCI_LINT_VERSION#v} "; then
	echo "lint: installing golangci-lint $GOLANGCI_LINT_VERSION"
	GOBIN="$(dirname "$bin")" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
fi

rc=0
unformatted=$(gofmt -l cmd internal)
if [[ -n $unformatted ]]; then
	echo "lint: run gofmt -w on: $unformatted"
	rc=1
fi
go vet ./... || rc=1
if ! go mod tidy -diff; then
	echo "lint: go.mod/go.sum are not tidy: run go mod tidy"
	rc=1
fi
# golangci-lint takes a lock for the whole machine; another run on it (a
# second checkout's lint) is waited for rather than taken for a failure.
"$bin" run --allow-serial-runners ./... || rc=1
exit "$rc"
