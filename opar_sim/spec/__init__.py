"""The experiment spec's only owner.

Schema, build, the dotted-path editor, grid, plugins, the generated reference.
"""
