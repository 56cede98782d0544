import type { ReactNode } from 'react';

const SAMPLE = `import { createPacedFetch, perSecond } from 'fetch-pacer';
import { PacerProvider, useRateLimitedFetch } from 'fetch-pacer/react';

// One budget for the whole app: 10 requests a second, as the API documents.
const api = createPacedFetch({ limits: perSecond(10) });

function Avatar({ id }: { id: string }) {
  const { status, data } = useRateLimitedFetch<User>(\`/api/users/\${id}\`);
  if (status === 'blocked') return <Spinner label="The API asked us to wait" />;
  if (status === 'success') return <img src={data.avatarUrl} alt={data.name} />;
  return <Spinner />; // queued or loading: it goes out when the limit allows
}

createRoot(root).render(
  <PacerProvider fetch={api}>
    <App />
  </PacerProvider>,
);`;

const TOKEN =
  /(\/\/[^\n]*)|('(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`|"(?:[^"\\]|\\.)*")|\b(import|from|const|function|return|if|export)\b|(<\/?[A-Z][A-Za-z]*|<\/?[a-z]+(?=[\s>]))|\b([A-Z][A-Za-z]+|use[A-Z][A-Za-z]*|createPacedFetch|perSecond|createRoot)\b/g;

/** A few colours for a code sample: comments, strings, keywords, tags, names. */
export function highlight(code: string): ReactNode[] {
  const out: ReactNode[] = [];
  let last = 0;
  for (const match of code.matchAll(TOKEN)) {
    const index = match.index ?? 0;
    if (index > last) out.push(code.slice(last, index));
    const kind = match[1]
      ? 'comment'
      : match[2]
        ? 'string'
        : match[3]
          ? 'keyword'
          : match[4]
            ? 'tag'
            : 'name';
    out.push(
      <span key={index} className={`tok-${kind}`}>
        {match[0]}
      </span>,
    );
    last = index + match[0].length;
  }
  out.push(code.slice(last));
  return out;
}

export function CodeSample() {
  return (
    <pre className="code">
      <code>{highlight(SAMPLE)}</code>
    </pre>
  );
}
