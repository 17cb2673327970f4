"""The app module componentize-py builds the prebuilt Python program runtime from (see
`plinth.runtime`): it keeps the interpreter's library files for run time, and exports the
callbacks that run whichever program plinth gives it."""

from plinth.runtime import export_library, program_callbacks

export_library()
Callbacks = program_callbacks()
