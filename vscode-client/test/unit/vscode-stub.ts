// Stands in for the `vscode` module in unit-test bundles: the code under test never touches it.
export {};
