"""One thin adapter per agent framework, each binding the gate to that framework's own hook.

Each module imports its framework at the top, so importing it needs the framework
installed (``pip install 'opar-sim[agents]'``); nothing else of opar-sim imports them.
"""
