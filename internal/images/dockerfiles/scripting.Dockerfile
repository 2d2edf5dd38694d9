# Small interpreters: Ruby, PHP, Perl, Lua, Tcl, GNU Awk and SQLite's shell,
# and POSIX sh (dash, which every Debian image has). Each is a few megabytes;
# one image for all of them costs less disk and build time than seven, and an
# interpreter's start-up does not depend on what else is installed beside it.
#
# POSIX sh runs here rather than in base although base has dash too: an
# image's language versions are measured only when the image is built, and
# base is normally up to date (unchanged Dockerfile), so a language added to
# it would carry no version until base and every image on it were rebuilt.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends ruby php-cli perl lua5.4 tcl gawk sqlite3 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
USER 10001:10001
