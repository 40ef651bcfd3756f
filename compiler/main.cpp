// compiler/main.cpp — the dsv41c command line (placeholder until the CLI lands).
int main() { return 0; }
