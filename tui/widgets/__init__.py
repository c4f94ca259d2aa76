"""The live and replay screens' widgets, one module each; import from the module that holds one."""
