# The optional machine-learning variant of the python image: PyTorch (CPU)
# and XGBoost from Debian's packages on top of everything the python image
# holds. It is large, so it is built only when asked for
# (`make images-ml`, or `mcp-code-runner images build python-ml`), never by a
# plain `images build`; a languages file points the python language at it
# (deploy/languages/python-ml.json, see docs/LANGUAGES.md).
#
# preinstalled.py (from the python image) imports both and adds them to the
# image's package list.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-torch python3-xgboost \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
RUN MPLCONFIGDIR=/tmp/mpl python3 -B /usr/local/lib/mcp-code-runner/preinstalled.py \
      /usr/share/mcp-code-runner/python-packages torch=torch xgboost=xgboost \
 && cat /usr/share/mcp-code-runner/python-packages \
 && rm -rf /tmp/mpl
USER 10001:10001
