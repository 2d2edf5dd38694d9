# Debian's Python 3 (3.13 in trixie) with numpy, pandas and matplotlib from
# Debian's packages, so data work and plots run with no network.
#
# Matplotlib draws with its Agg renderer through a small backend
# (mcr_backend): plt.show() saves each open figure as /workspace/figure-N.png,
# which the run returns as an image.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-numpy python3-pandas python3-matplotlib \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
RUN printf '%s\n' \
  '"""Matplotlib backend of mcp-code-runner: Agg drawing; show() saves figures as PNG files."""' \
  'import os' \
  'from matplotlib._pylab_helpers import Gcf' \
  'from matplotlib.backend_bases import FigureManagerBase' \
  'from matplotlib.backends.backend_agg import FigureCanvasAgg' \
  '' \
  'FigureCanvas = FigureCanvasAgg' \
  'FigureManager = FigureManagerBase' \
  '' \
  '' \
  'def next_path(directory="/workspace"):' \
  '    n = 1' \
  '    while os.path.exists(os.path.join(directory, "figure-%d.png" % n)):' \
  '        n += 1' \
  '    return os.path.join(directory, "figure-%d.png" % n)' \
  '' \
  '' \
  'def show(*args, **kwargs):' \
  '    for manager in Gcf.get_all_fig_managers():' \
  '        manager.canvas.figure.savefig(next_path(), format="png")' \
  '    Gcf.destroy_all()' \
  > /usr/lib/python3/dist-packages/mcr_backend.py \
 && MPLBACKEND=module://mcr_backend MPLCONFIGDIR=/tmp/mpl python3 -c "import matplotlib.pyplot, numpy, pandas" \
 && rm -rf /tmp/mpl
ENV MPLBACKEND=module://mcr_backend MPLCONFIGDIR=/tmp/matplotlib
USER 10001:10001
