# Debian's Python 3 (3.13 in trixie) with the libraries of data work from
# Debian's packages (numpy, pandas, matplotlib, scikit-learn, SciPy, SymPy,
# statsmodels, seaborn, Requests, Beautiful Soup, lxml, NetworkX, openpyxl,
# Pillow, PyYAML, tabulate, NLTK without its corpora, Plotly), so data work
# and plots run with no network.
#
# preinstalled.py imports every one of them (the build fails when one does
# not import) and writes /usr/share/mcp-code-runner/python-packages, one
# "distribution version" line each; the python language's "preinstalled"
# command prints it when the image is built, and list_languages reports it.
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
      python3-sklearn python3-scipy python3-sympy python3-statsmodels python3-seaborn \
      python3-requests python3-bs4 python3-lxml python3-networkx python3-openpyxl \
      python3-pil python3-yaml python3-tabulate python3-nltk python3-plotly \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
COPY preinstalled.py /usr/local/lib/mcp-code-runner/preinstalled.py
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
 && MPLBACKEND=module://mcr_backend MPLCONFIGDIR=/tmp/mpl python3 -c "import matplotlib.pyplot" \
 && MPLBACKEND=module://mcr_backend MPLCONFIGDIR=/tmp/mpl python3 -B /usr/local/lib/mcp-code-runner/preinstalled.py \
      /usr/share/mcp-code-runner/python-packages \
      numpy=numpy pandas=pandas matplotlib=matplotlib.pyplot scikit-learn=sklearn scipy=scipy \
      sympy=sympy statsmodels=statsmodels.api seaborn=seaborn requests=requests \
      beautifulsoup4=bs4 lxml=lxml.etree networkx=networkx openpyxl=openpyxl pillow=PIL.Image \
      pyyaml=yaml tabulate=tabulate nltk=nltk plotly=plotly.express \
 && cat /usr/share/mcp-code-runner/python-packages \
 && rm -rf /tmp/mpl
ENV MPLBACKEND=module://mcr_backend MPLCONFIGDIR=/tmp/matplotlib
USER 10001:10001
