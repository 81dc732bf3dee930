// The demo calculator's evaluator: arithmetic only (numbers, + - * / % ^, unary minus, parentheses), parsed by
// recursive descent, so no input is ever executed as code.

export type ArithmeticResult = { value: number } | { error: string };

const MAX_DEPTH = 100;

export function evaluateArithmetic(expression: string): ArithmeticResult {
  const tokens = expression.match(/\d+(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?|[-+*/%^()]|\S/gi) ?? [];
  let at = 0;
  let depth = 0;
  const peek = () => tokens[at];
  const fail = (message: string): never => {
    throw new SyntaxError(message);
  };

  // sum := product (("+" | "-") product)*
  const sum = (): number => {
    let value = product();
    while (peek() === '+' || peek() === '-')
      value = tokens[at++] === '+' ? value + product() : value - product();
    return value;
  };
  // product := power (("*" | "/" | "%") power)*
  const product = (): number => {
    let value = power();
    for (let op = peek(); op === '*' || op === '/' || op === '%'; op = peek()) {
      at++;
      const right = power();
      if (op !== '*' && right === 0) fail('division by zero');
      value = op === '*' ? value * right : op === '/' ? value / right : value % right;
    }
    return value;
  };
  // power := unary ("^" power)?   (right-associative)
  const power = (): number => {
    const base = unary();
    if (peek() !== '^') return base;
    at++;
    return base ** power();
  };
  // unary := ("-" | "+") unary | atom
  const unary = (): number => {
    if (peek() === '-' || peek() === '+') return tokens[at++] === '-' ? -unary() : unary();
    return atom();
  };
  // atom := number | "(" sum ")"
  const atom = (): number => {
    const token = tokens[at++];
    if (token === undefined) return fail('the expression ends too early');
    if (token === '(') {
      if (++depth > MAX_DEPTH) fail('too many nested parentheses');
      const value = sum();
      if (tokens[at++] !== ')') fail('a "(" is never closed');
      depth--;
      return value;
    }
    const value = Number(token);
    if (!/^[\d.]/.test(token) || Number.isNaN(value)) fail(`unexpected "${token}"`);
    return value;
  };

  try {
    if (tokens.length === 0) return { error: 'an empty expression' };
    const value = sum();
    if (at < tokens.length) fail(`unexpected "${tokens[at]}"`);
    if (!Number.isFinite(value)) return { error: 'the result is not a finite number' };
    return { value };
  } catch (err) {
    if (err instanceof SyntaxError) return { error: err.message };
    throw err;
  }
}
