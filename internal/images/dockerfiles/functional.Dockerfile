# Functional and logic languages: Haskell (GHC), OCaml, Common Lisp (SBCL),
# Prolog (SWI-Prolog), Erlang and Elixir (one BEAM) and Scheme.
#
# It builds on the native image rather than on base because GHC and OCaml's
# native compiler assemble and link with GCC and binutils: sharing them saves
# their size and install time. SBCL, SWI-Prolog, the BEAM and Chez Scheme are
# small and self-contained; grouping them here keeps the image count down
# without slowing anyone's start-up (image size does not affect it).
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends ghc ocaml sbcl swi-prolog-core erlang-base elixir chezscheme \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
USER 10001:10001
