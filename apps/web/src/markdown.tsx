// A reply's text as Markdown: react-markdown (GitHub-flavoured with remark-gfm), code blocks highlighted by
// rehype-highlight (highlight.js grammars) with a copy button. Safe by construction: react-markdown builds React
// elements from the Markdown syntax tree and never renders raw HTML in the text (it shows as text), and its URL
// filter drops javascript: and other unsafe links.

import type { Element, ElementContent } from 'hast';
import ReactMarkdown, { type Components } from 'react-markdown';
import rehypeHighlight from 'rehype-highlight';
import remarkGfm from 'remark-gfm';
import { CopyButton } from './copy-button';

/** The text of a syntax tree node (what a code block's copy button copies). */
function textOf(node: Element | ElementContent): string {
  if (node.type === 'text') return node.value;
  if (node.type === 'element') return node.children.map(textOf).join('');
  return '';
}

const components: Components = {
  pre({ node, children }) {
    const code = node?.children.find((c): c is Element => c.type === 'element' && c.tagName === 'code');
    const className = code?.properties.className;
    const classes = Array.isArray(className) ? className.map(String) : [];
    const language = classes.find((c) => c.startsWith('language-'))?.slice('language-'.length);
    const text = node ? textOf(node).replace(/\n$/, '') : '';
    return (
      <div className="code-block" data-testid="code-block" data-language={language ?? ''}>
        <div className="code-block-head">
          <span>{language ?? 'code'}</span>
          <CopyButton text={text} label="Copy code" testId="copy-code" />
        </div>
        <pre>{children}</pre>
      </div>
    );
  },
  a({ children, href }) {
    return (
      <a href={href} target="_blank" rel="noopener noreferrer nofollow">
        {children}
      </a>
    );
  },
};

export function Markdown({ text }: { text: string }) {
  return (
    <ReactMarkdown remarkPlugins={[remarkGfm]} rehypePlugins={[rehypeHighlight]} components={components}>
      {text}
    </ReactMarkdown>
  );
}
