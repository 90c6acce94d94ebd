"""The review workbench's library: the `reviews` store, label import and export, the web app, agreement.

`pipelines.review` (the `groundwatch review` command) only declares arguments and calls into this package.
"""
